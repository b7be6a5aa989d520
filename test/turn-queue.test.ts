import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { TurnQueue } from "../src/store/concurrency/turn-queue.ts";

// Issue 20: on PostgreSQL the single-key KV writes of one turn go as one statement (KvSetBatch).

/** A queue of at most 3 items a run that records each run, doubles numbers, refuses negatives and throws at 99. */
function recording(): { queue: TurnQueue<number, number>; runs: number[][]; events: string[] } {
  const runs: number[][] = [];
  const events: string[] = [];
  const queue = new TurnQueue<number, number>((items) => {
    runs.push(items);
    events.push(`run ${items.join(",")}`);
    if (items.includes(99)) return Promise.reject(new Error("the store refused"));
    return Promise.resolve(items.map((n): PromiseSettledResult<number> => (n < 0 ? { status: "rejected", reason: new Error(`refused ${n}`) } : { status: "fulfilled", value: n * 2 })));
  }, 3);
  return { queue, runs, events };
}

describe("TurnQueue", () => {
  it("runs the items of one turn together, in order, each with its own outcome", async () => {
    const { queue, runs } = recording();
    const results = await Promise.allSettled([queue.run(1), queue.run(-2), queue.run(1)]);
    expect(runs).toEqual([[1, -2, 1]]);
    expect(results).toEqual([
      { status: "fulfilled", value: 2 },
      { status: "rejected", reason: new Error("refused -2") },
      { status: "fulfilled", value: 2 },
    ]);
  });

  it("runs an item only after it was asked, and a later turn's items in a run of their own", async () => {
    const { queue, events } = recording();
    const first = queue.run(1).then(() => events.push("answered 1"));
    events.push("asked 1");
    await nextTurn();
    const second = queue.run(2).then(() => events.push("answered 2"));
    events.push("asked 2");
    await Promise.all([first, second]);
    expect(events).toEqual(["asked 1", "run 1", "answered 1", "asked 2", "run 2", "answered 2"]);
  });

  it("splits a turn into runs of at most max items; a run that throws fails its own items only", async () => {
    const { queue, runs } = recording();
    const results = await Promise.allSettled([1, 2, 3, 4, 99, 5, 6].map((n) => queue.run(n)));
    expect(runs).toEqual([
      [1, 2, 3],
      [4, 99, 5],
      [6],
    ]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected", "rejected", "rejected", "fulfilled"]);
    expect(results[4]).toMatchObject({ reason: new Error("the store refused") });
  });

  it("fails an item whose outcome the run left out", async () => {
    const queue = new TurnQueue<number, number>((items) => Promise.resolve(items.slice(1).map((n) => ({ status: "fulfilled" as const, value: n }))));
    const results = await Promise.allSettled([queue.run(1), queue.run(2)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
  });
});
