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

  describe("one run in flight per key (oneRunBy)", () => {
    /** Runs of [key, value] pairs, each held open until the test lets it go. */
    function gated(): { queue: TurnQueue<[string, number], number>; runs: string[][]; open: () => void; openAll: () => void } {
      const runs: string[][] = [];
      const gates: (() => void)[] = [];
      const queue = new TurnQueue<[string, number], number>(
        async (items) => {
          runs.push(items.map(([key, n]) => `${key}${n}`));
          await new Promise<void>((resolve) => gates.push(resolve));
          if (items.some(([, n]) => n === 99)) throw new Error("the store refused");
          return items.map(([, n]) => ({ status: "fulfilled" as const, value: n }));
        },
        3,
        null,
        ([key]) => key,
      );
      return { queue, runs, open: () => gates.shift()?.(), openAll: () => gates.splice(0).forEach((go) => go()) };
    }

    it("holds a key's items while its run is in flight, then sends them together, in the order asked", async () => {
      const { queue, runs, open } = gated();
      const answered: number[] = [];
      const asked = (key: string, n: number) => queue.run([key, n]).then((value) => answered.push(value));
      const all = [asked("a", 1)];
      await nextTurn();
      all.push(asked("a", 2), asked("b", 1));
      await nextTurn();
      all.push(asked("a", 3));
      await nextTurn();
      // b had nothing in flight, so it went; a's two later items wait for a1.
      expect(runs).toEqual([["a1"], ["b1"]]);
      open();
      await all[0];
      await nextTurn();
      expect(runs).toEqual([["a1"], ["b1"], ["a2", "a3"]]);
      open();
      open();
      await Promise.all(all);
      expect(answered.sort()).toEqual([1, 1, 2, 3]);
    });

    it("sends a held item ahead of its key's items asked in the turn it was let go", async () => {
      const { queue, runs, open, openAll } = gated();
      const first = queue.run(["a", 1]);
      await nextTurn();
      const second = queue.run(["a", 2]);
      await nextTurn();
      // a3 is asked in the turn a1 settles in, before a2 is let go: a2 was asked first, so it runs first.
      const third = queue.run(["a", 3]);
      open();
      await first;
      await nextTurn();
      expect(runs).toEqual([["a1"], ["a2", "a3"]]);
      openAll();
      await Promise.all([second, third]);
    });

    it("lets a key's held items go after a run that threw, and keys in one turn stay in one run", async () => {
      const { queue, runs, open, openAll } = gated();
      const failed = queue.run(["a", 99]);
      const same = queue.run(["a", 4]);
      await nextTurn();
      const later = queue.run(["a", 5]);
      await nextTurn();
      expect(runs).toEqual([["a99", "a4"]]);
      open();
      await expect(failed).rejects.toThrow("the store refused");
      await expect(same).rejects.toThrow("the store refused");
      await nextTurn();
      expect(runs).toEqual([["a99", "a4"], ["a5"]]);
      openAll();
      expect(await later).toBe(5);
    });

    it("past max, sends a key's items a run at a time, in order, and never splits a key across runs", async () => {
      const { queue, runs, open, openAll } = gated();
      const asked = [1, 2, 3, 4, 5].map((n) => queue.run(["a", n]));
      asked.push(queue.run(["b", 1]), queue.run(["b", 2]));
      await nextTurn();
      // a's first three fill a run; b's two do not fit beside them, so they go in a run of their own.
      expect(runs).toEqual([["a1", "a2", "a3"], ["b1", "b2"]]);
      open();
      await asked[0];
      await nextTurn();
      expect(runs).toEqual([["a1", "a2", "a3"], ["b1", "b2"], ["a4", "a5"]]);
      openAll();
      expect(await Promise.all(asked)).toEqual([1, 2, 3, 4, 5, 1, 2]);
    });
  });
});
