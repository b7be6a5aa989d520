import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { TurnBatch } from "../src/store/concurrency/turn-batch.ts";

// Issue 20: on PostgreSQL the op calls of one event-loop turn read their apps in one query.

/** A loader that records each query's keys and answers `{ key }` for keys not starting with "x". */
function recording(): { batch: TurnBatch<{ key: string }>; queries: string[][]; events: string[] } {
  const queries: string[][] = [];
  const events: string[] = [];
  const batch = new TurnBatch<{ key: string }>((keys) => {
    queries.push(keys);
    events.push(`query ${keys.join(",")}`);
    if (keys.includes("boom")) return Promise.reject(new Error("the store refused"));
    return Promise.resolve(new Map(keys.filter((key) => !key.startsWith("x")).map((key) => [key, { key }])));
  }, 3);
  return { batch, queries, events };
}

describe("TurnBatch", () => {
  it("makes the loads of one turn one query, each key once, and shares a key's value, frozen", async () => {
    const { batch, queries } = recording();
    const loads = [batch.load("a"), batch.load("b"), batch.load("a"), batch.load("xmissing")];
    const [a1, b, a2, missing] = await Promise.all(loads);
    expect(queries).toEqual([["a", "b", "xmissing"]]);
    expect(a1).toEqual({ key: "a" });
    expect(a2).toBe(a1);
    expect(Object.isFrozen(a1)).toBe(true);
    expect(b).toEqual({ key: "b" });
    expect(missing).toBeUndefined();
  });

  it("sends a query only after every load in it was asked, and a later turn's loads in a query of their own", async () => {
    const { batch, events } = recording();
    const first = batch.load("a").then(() => events.push("answered a"));
    events.push("asked a");
    await nextTurn();
    const second = batch.load("a").then(() => events.push("answered a again"));
    events.push("asked a again");
    await Promise.all([first, second]);
    expect(events).toEqual(["asked a", "query a", "answered a", "asked a again", "query a", "answered a again"]);
  });

  it("splits a turn's keys into queries of at most maxKeys; a failed query fails its own loads only", async () => {
    const { batch, queries } = recording();
    const results = await Promise.allSettled(["a", "b", "c", "d", "boom", "e", "f"].map((key) => batch.load(key)));
    expect(queries).toEqual([
      ["a", "b", "c"],
      ["d", "boom", "e"],
      ["f"],
    ]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected", "rejected", "rejected", "fulfilled"]);
    expect(results[4]).toMatchObject({ reason: new Error("the store refused") });
  });
});
