import { describe, expect, it } from "vitest";
import { CodeCache } from "../src/runtime/executor/internal-api/code-cache.ts";
import type { AppCode, CodeSource } from "../src/runtime/executor/types.ts";

/** Sources of `chars` characters each (2 bytes a character as kept); `missing` ids load as null, `failing` ones throw. */
function source(chars: number, missing: string[] = [], failing: string[] = []): CodeSource & { loads: string[] } {
  const loads: string[] = [];
  return {
    loads,
    load(appId, revision) {
      loads.push(`${appId}:${revision}`);
      if (failing.includes(appId)) return Promise.reject(new Error("the store is unreachable"));
      if (missing.includes(appId)) return Promise.resolve(null);
      const code: AppCode = { module: "x".repeat(chars), imports: [], origins: [], routes: {} };
      return Promise.resolve(code);
    },
  };
}

describe("CodeCache: a revision's source, kept within a weight", () => {
  it("keeps what fits, forgetting the least recently asked for first", async () => {
    const src = source(100);
    const cache = new CodeCache(src, 600);
    for (const app of ["a", "b", "c"]) await cache.get(app, 1);
    expect(cache.footprint()).toEqual({ sources: 3, bytes: 600 });
    await cache.get("a", 1);
    await cache.get("d", 1);
    expect(cache.footprint()).toEqual({ sources: 3, bytes: 600 });
    src.loads.length = 0;
    for (const app of ["a", "c", "d"]) await cache.get(app, 1);
    expect(src.loads).toEqual([]);
    await cache.get("b", 1);
    expect(src.loads).toEqual(["b:1"]);
  });

  it("keeps thousands of small apps' sources, where it used to keep 1,000", async () => {
    const src = source(150);
    const cache = new CodeCache(src);
    for (let i = 0; i < 5000; i++) await cache.get(`app-${i}`, 1);
    src.loads.length = 0;
    for (let i = 0; i < 5000; i++) await cache.get(`app-${i}`, 1);
    expect(src.loads).toEqual([]);
    expect(cache.footprint()).toEqual({ sources: 5000, bytes: 5000 * 300 });
  });

  it("shares one load between callers, and keeps neither a missing revision nor a failed load", async () => {
    const src = source(10, ["gone"], ["down"]);
    const cache = new CodeCache(src, 1000);
    const [one, two] = await Promise.all([cache.get("a", 1), cache.get("a", 1)]);
    expect(one).toBe(two);
    expect(await cache.get("gone", 1)).toBeNull();
    await expect(cache.get("down", 1)).rejects.toThrow("unreachable");
    expect(cache.footprint()).toEqual({ sources: 1, bytes: 20 });
    await cache.get("gone", 1);
    expect(src.loads.filter((l) => l === "gone:1")).toHaveLength(2);
  });

  it("does not keep a source heavier than everything it may hold", async () => {
    const cache = new CodeCache(source(1000), 600);
    await cache.get("huge", 1);
    expect(cache.footprint()).toEqual({ sources: 0, bytes: 0 });
  });
});
