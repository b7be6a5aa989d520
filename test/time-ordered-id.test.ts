import { describe, expect, it } from "vitest";
import { timeOrderedUuid } from "../src/store/index.ts";

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("time-ordered ids (UUID version 7)", () => {
  it("are UUIDs of version 7 and variant 10 that carry their millisecond", () => {
    const at = Date.UTC(2026, 10, 26, 5, 54, 10, 776);
    const id = timeOrderedUuid(at);
    expect(id).toMatch(V7);
    expect(parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(at);
  });

  it("sort by their millisecond, so an index on them grows at its end, and never repeat", () => {
    // 3,000 ids (the random pool refills every 512), 7 to a millisecond.
    const start = Date.UTC(2026, 0, 1);
    const byMs: string[][] = Array.from({ length: 429 }, (_, ms) => Array.from({ length: 7 }, () => timeOrderedUuid(start + ms)));
    const all = byMs.flat();
    expect(all.every((id) => V7.test(id))).toBe(true);
    expect(new Set(all).size).toBe(all.length);
    const sorted = [...all].sort();
    // Within a millisecond the order is random; across them it is the order of their times.
    expect(sorted.map((id) => id.slice(0, 13))).toEqual(all.map((id) => id.slice(0, 13)));
    expect(byMs.every((ids, ms) => new Set(sorted.slice(ms * 7, ms * 7 + 7)).size === 7 && ids.every((id) => sorted.slice(ms * 7, ms * 7 + 7).includes(id)))).toBe(true);
  });
});
