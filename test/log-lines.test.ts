import { describe, expect, it } from "vitest";
import { LogRings, RING_LINES } from "../src/domain/logs/ring.ts";
import { CallLog, MAX_CALL_BYTES, MAX_CALL_LINES } from "../src/runtime/logs/call-log.ts";
import { LineRedactors } from "../src/runtime/logs/redactors.ts";
import type { LogLine } from "../src/runtime/ports.ts";
import { systemClock } from "../src/config/clock.ts";

const SECRET = "s3cret-value-0123456789";

/** A call's log writing into `out`, with the app's one secret. */
function callLog(out: LogLine[], startedAt = 1000, now = () => 2000): CallLog {
  const redactors = new LineRedactors({ forApp: () => Promise.resolve({ TOKEN: SECRET }) }, systemClock);
  return new CallLog({ write: (_app, lines) => void out.push(...lines) }, { appId: "a", op: "go", requestId: "r1", startedAt }, () => redactors.for("a", 1), now);
}

describe("a call's lines as Node takes them from the isolate", () => {
  it("a line the isolate cut inside a secret loses its end: no first part of the secret survives", async () => {
    const out: LogLine[] = [];
    const log = callLog(out);
    const lead = "x".repeat(80);
    await log.captured({ lines: [["info", 1500, `${lead} key=${SECRET.slice(0, 12)}`, 1]], dropped: 0 });
    expect(out).toHaveLength(1);
    const message = out[0]?.message ?? "";
    expect(message).not.toContain(SECRET.slice(0, 4));
    // What comes before the cut secret is kept, less as much as the longest form of a secret.
    expect(message).toBe(`${`${lead} key=${SECRET.slice(0, 12)}`.slice(0, lead.length + 5 + 12 - SECRET.length)}…`);
  });

  it("what a tampered shim sends is checked: levels, clock, line count, bytes, shapes", async () => {
    const out: LogLine[] = [];
    const log = callLog(out);
    const lines = [["shout", -5, "bad level"], "not a line", ["info", 99_999, 42], ["error", 1500, "y".repeat(40_000)], ...Array.from({ length: 200 }, (_, i) => ["warn", 1500, `x${i}`])];
    await log.captured({ lines, dropped: -3 });
    await log.finish();
    const kept = out.slice(0, -1);
    expect(kept[0]).toMatchObject({ level: "info", time: 1000, message: "bad level", op: "go", requestId: "r1" });
    expect(kept.every((l) => l.time >= 1000 && l.time <= 2000)).toBe(true);
    // The 40 KB line takes what is left of the call's 16 KB, cut; nothing after it fits.
    expect(kept).toHaveLength(2);
    expect(kept[1]?.message.endsWith("…")).toBe(true);
    expect(kept.reduce((n, l) => n + Buffer.byteLength(l.message), 0)).toBeLessThanOrEqual(MAX_CALL_BYTES + 3);
    // 204 entries: 2 malformed, and 200 not kept for want of room: the marker counts 202.
    expect(out.at(-1)?.message).toContain("[truncated] 202 more lines not kept");
  });

  it("env.LOG lines and console lines share the call's caps", async () => {
    const out: LogLine[] = [];
    const log = callLog(out);
    for (let i = 0; i < 60; i++) await log.emit("warning", `emitted ${i}`, undefined);
    await log.captured({ lines: Array.from({ length: 10 }, (_, i) => ["info", 1500, `printed ${i}`]), dropped: 0 });
    await log.finish();
    expect(out.filter((l) => l.message.startsWith("emitted"))).toHaveLength(60);
    expect(out.filter((l) => l.message.startsWith("printed"))).toHaveLength(MAX_CALL_LINES - 60);
    expect(out.at(-1)?.message).toContain("[truncated] 6 more lines not kept");
    expect(out[0]?.level).toBe("warn");
  });
});

describe("log rings", () => {
  const line = (message: string, extra: Partial<LogLine> = {}): LogLine => ({ time: 1, level: "info", op: "op", requestId: null, message, ...extra });

  it("keep an app's newest 1,000 lines, newest first", () => {
    const rings = new LogRings();
    for (let i = 0; i < 2500; i++) rings.add("a", [line(`l${i}`)]);
    const got = rings.read("a", { limit: 5000 });
    expect(got).toHaveLength(RING_LINES);
    expect(got[0]?.message).toBe("l2499");
    expect(got.at(-1)?.message).toBe("l1500");
  });

  it("hold an app to its bytes, and all apps to theirs by dropping the app written longest ago", () => {
    const rings = new LogRings(10_000, 20_000);
    for (let i = 0; i < 20; i++) rings.add("a", [line("x".repeat(1000))]);
    expect(rings.bytes).toBeLessThanOrEqual(10_000);
    expect(rings.read("a", { limit: 100 }).length).toBeLessThan(20);
    rings.add("b", Array.from({ length: 4 }, () => line("y".repeat(1000))));
    rings.add("c", Array.from({ length: 4 }, () => line("z".repeat(1000))));
    expect(rings.bytes).toBeLessThanOrEqual(20_000);
    expect(rings.read("a", { limit: 100 })).toEqual([]);
    expect(rings.read("b", { limit: 100 })).toHaveLength(4);
    expect(rings.read("c", { limit: 100 })).toHaveLength(4);
  });
});
