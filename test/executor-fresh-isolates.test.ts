import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";
import type { PoolEvent } from "../src/runtime/executor/types.ts";

const FRESH = "new-claimed-0";
const CAPACITY = 3;

/**
 * The fresh process (first calls of new code) keeps few isolates, and none of code that has
 * graduated to its lane: what it held past that was most of a many-apps host's memory (bench
 * Zipf row). Executor-level, so SQLite only.
 */
describe("executor: what the fresh process keeps", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1, newProcesses: 1, tuning: { maxIsolatesPerFreshProcess: CAPACITY, callsToGraduate: 3, pingIntervalMs: 100 } });
  });
  afterAll(async () => h.close());

  const evictedFromFresh = (appId: string) => (e: PoolEvent) => e.type === "evicted" && e.slot === FRESH && e.key.startsWith(`${appId}:`);

  it("a revision's isolate leaves the fresh process once its calls have moved to the lane", async () => {
    const app = h.code.publish("graduating", appModule({ who: "async () => 'me'" }), { routes: { who: {} } });
    const graduated = h.nextEvent((e) => e.type === "graduated" && e.appId === app.id);
    const evicted = h.nextEvent(evictedFromFresh(app.id));
    for (let i = 0; i < 3; i++) expect(await h.call(app, "who")).toBe("me");
    await graduated;
    // Idle for minutes it would stay (isolateIdleMs); retired, it goes at the next ticks.
    const gone = await Promise.race([evicted.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 5_000))]);
    expect(gone).toBe(true);
    expect(h.events.filter((e) => e.type === "evicted" && e.key.startsWith(`${app.id}:`)).map((e) => (e.type === "evicted" ? e.slot : ""))).toEqual([FRESH]);
    // Its calls are the lane's now, and answer there.
    expect(await h.call(app, "who")).toBe("me");
    expect(h.executor.pool.processOf(app.id)?.pid).not.toBe(undefined);
  });

  it(`keeps at most ${CAPACITY} isolates of code still proving itself, the least recently called going first`, async () => {
    const apps = Array.from({ length: CAPACITY + 3 }, (_, i) => h.code.publish(`proving-${i}`, appModule({ who: `async () => ${i}` }), { routes: { who: {} } }));
    const firstThree = apps.slice(0, 3).map((app) => h.nextEvent(evictedFromFresh(app.id)));
    for (const [i, app] of apps.entries()) expect(await h.call(app, "who")).toBe(i);
    // One call each graduates none of them: each new one past the capacity evicts the oldest.
    await Promise.all(firstThree);
    const evicted = h.events.filter((e) => e.type === "evicted" && e.slot === FRESH && e.key.startsWith("proving-"));
    expect(evicted.map((e) => (e.type === "evicted" ? e.key.split(":")[0] : ""))).toEqual(["proving-0", "proving-1", "proving-2"]);
    // An evicted one's next call builds it again and answers.
    const [oldest] = apps;
    expect(oldest === undefined ? null : await h.call(oldest, "who")).toBe(0);
  });
});
