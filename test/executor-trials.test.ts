import { describe, expect, it } from "vitest";
import { Trials } from "../src/runtime/executor/trials.ts";

/** The bookkeeping of suspects on trial (trials.ts); the pool's use of it is in test/hostile/. */
describe("executor: trials of suspects", () => {
  it("spreads suspects over up to `capacity` groups, then fills the smallest", () => {
    const trials = new Trials(2);
    trials.accuse(["a", "b", "c"], 0);
    expect(trials.size).toBe(2);
    const groups = new Set(["a", "b", "c"].map((id) => trials.of(id)));
    expect(groups.size).toBe(2);
    trials.accuse(["d"], 0);
    expect(trials.size).toBe(2);
    expect([...new Set(["a", "b", "c", "d"].map((id) => trials.of(id)?.apps.size))]).toEqual([2]);
  });

  it("leaves an app already on trial in its group", () => {
    const trials = new Trials(4);
    trials.accuse(["a"], 0);
    const first = trials.of("a");
    trials.accuse(["a", "b"], 0);
    expect(trials.of("a")).toBe(first);
    expect(trials.of("b")).not.toBe(first);
  });

  it("dissolves a faulted group whose culprit was charged: the others stay on trial together", () => {
    const trials = new Trials(1);
    trials.accuse(["a", "b", "c"], 0);
    const group = trials.of("a");
    if (group === undefined) throw new Error("a is not on trial");
    trials.dissolve(group, "b", 10);
    expect(trials.of("b")).toBeUndefined();
    expect(trials.of("a")).toBeDefined();
    expect(trials.of("a")).not.toBe(group);
    expect(trials.of("a")).toBe(trials.of("c"));
  });

  it("splits a faulted group whose apps all ran, halving it each time until one is left", () => {
    const trials = new Trials(1);
    const apps = ["a", "b", "c", "d", "e", "f", "g", "h"];
    trials.accuse(apps, 0);
    let faults = 0;
    // "e" is the culprit: each fault happens in the group that holds it.
    for (let group = trials.of("e"); group !== undefined && group.apps.size > 1; group = trials.of("e")) {
      trials.split(group, [...group.apps], faults);
      faults += 1;
    }
    expect(trials.of("e")?.apps).toEqual(new Set(["e"]));
    expect(faults).toBe(Math.log2(apps.length));
    for (const id of apps) expect(trials.of(id)).toBeDefined();
  });

  it("gives a convict a group of its own, taking it out of a shared one; past capacity it joins the smallest", () => {
    const trials = new Trials(2);
    trials.accuse(["a", "b", "c"], 0);
    expect(trials.of("a")).toBe(trials.of("c"));
    const b = trials.of("b");
    if (b === undefined) throw new Error("b is not on trial");
    b.quietSince = -10_000;
    expect(trials.acquit(0, 5_000)).toEqual([b]);
    const own = trials.alone("a", 1);
    expect([...own.apps]).toEqual(["a"]);
    expect(trials.of("c")?.apps).toEqual(new Set(["c"]));
    expect(trials.alone("a", 2)).toBe(own);
    // Both groups are taken: a third convict shares the smallest.
    expect(trials.alone("d", 3).apps.size).toBe(2);
    trials.remove("d");
    expect(trials.of("d")).toBeUndefined();
  });

  it("acquits groups with nothing in flight once they have been quiet for clearMs", () => {
    const trials = new Trials(4);
    trials.accuse(["a", "b"], 0);
    const a = trials.of("a");
    if (a === undefined) throw new Error("a is not on trial");
    a.inflight = 1;
    expect(trials.acquit(5_000, 5_000).flatMap((t) => [...t.apps])).toEqual(["b"]);
    a.inflight = 0;
    a.quietSince = 4_000;
    expect(trials.acquit(8_999, 5_000)).toEqual([]);
    expect(trials.acquit(9_000, 5_000).flatMap((t) => [...t.apps])).toEqual(["a"]);
    expect(trials.size).toBe(0);
  });
});
