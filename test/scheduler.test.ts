import { afterAll, beforeAll, expect, it } from "vitest";
import { HOUR, ManualClock, MINUTE, SECOND, systemClock } from "../src/config/clock.ts";
import { Scheduler } from "../src/scheduler/scheduler.ts";
import type { Store } from "../src/store/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

const quiet = { error: () => undefined, info: () => undefined };

describeEachDialect("scheduler leases", (dialect) => {
  let store: TestStore;
  let other: Store;
  beforeAll(async () => {
    store = await openTestStore(dialect);
    other = store.openAnother();
  });
  afterAll(async () => {
    await other.close();
    await store.dispose();
  });

  it("runs each period of a job exactly once across two instances ticking concurrently", async () => {
    const clock = new ManualClock();
    const runs: string[] = [];
    const a = new Scheduler(store.db, clock, quiet);
    const b = new Scheduler(other.db, clock, quiet);
    for (const [label, scheduler] of [["a", a], ["b", b]] as const) {
      scheduler.add({ name: "sweep", everyMs: HOUR, run: () => Promise.resolve(void runs.push(label)) });
    }
    for (let hour = 0; hour < 24; hour++) {
      // Several ticks per period from both instances at once; only the first claim wins.
      await Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);
      clock.advance(20 * MINUTE);
      await Promise.all([a.tick(), b.tick()]);
      clock.advance(40 * MINUTE);
    }
    expect(runs).toHaveLength(24);
  });

  it("keeps running other jobs when one throws, and retries it next period", async () => {
    const clock = new ManualClock();
    const errors: unknown[] = [];
    const scheduler = new Scheduler(store.db, clock, { error: (e: unknown) => void errors.push(e), info: () => undefined });
    let attempts = 0;
    let healthy = 0;
    scheduler.add({ name: "flaky", everyMs: MINUTE, run: () => Promise.reject(new Error(`attempt ${++attempts}`)) });
    scheduler.add({ name: "healthy", everyMs: MINUTE, run: () => Promise.resolve(void healthy++) });
    expect(await scheduler.tick()).toEqual(["healthy"]);
    expect(await scheduler.tick()).toEqual([]);
    clock.advance(MINUTE);
    expect(await scheduler.tick()).toEqual(["healthy"]);
    expect([attempts, healthy, errors.length]).toEqual([2, 2, 2]);
  });

  it("an instance that lost a period wakes when that period's lease opens, not a beat later", async () => {
    // A claims the period and is never heard from again (killed mid-tick); B was started with a
    // beat far longer than the test, so only waking at the lease's opening can run the job.
    const period = 600;
    const dead = new Scheduler(store.db, systemClock, quiet);
    const survivor = new Scheduler(other.db, systemClock, quiet);
    const ran = new Promise<number>((resolve) => {
      dead.add({ name: "takeover", everyMs: period, run: () => Promise.resolve() });
      survivor.add({ name: "takeover", everyMs: period, run: () => Promise.resolve(resolve(Date.now())) });
    });
    expect(await dead.tick()).toEqual(["takeover"]);
    const claimedAt = Date.now();
    expect(await survivor.nextOpening()).toBeGreaterThanOrEqual(claimedAt);
    survivor.start(HOUR);
    try {
      const at = await ran;
      expect(at - claimedAt).toBeGreaterThanOrEqual(period - 50);
      expect(at - claimedAt).toBeLessThan(period + 5 * SECOND);
    } finally {
      await survivor.close();
    }
  });

  it("a job stuck in its lane holds up neither the other lanes' next periods nor the next claims; close waits for it", async () => {
    // The routine tick's period is short; a DNS outage holds the domain re-check for minutes.
    const period = 300;
    const scheduler = new Scheduler(store.db, systemClock, quiet);
    let release = () => {};
    const stuck = new Promise<void>((resolve) => (release = resolve));
    let stuckRuns = 0;
    let ticks = 0;
    const thirdTick = new Promise<void>((resolve) => {
      scheduler.add({ name: "lanes-stuck", everyMs: period, lane: "dns", run: () => ((stuckRuns += 1), stuck) });
      scheduler.add({ name: "lanes-quick", everyMs: period, lane: "routines", run: () => Promise.resolve(++ticks === 3 ? resolve() : undefined) });
    });
    scheduler.start(HOUR);
    let closed = false;
    try {
      await thirdTick;
      // Its periods came and went while it ran: it was not queued behind itself.
      expect(stuckRuns).toBe(1);
    } finally {
      const closing = scheduler.close().then(() => (closed = true));
      await Promise.resolve();
      expect(closed).toBe(false);
      release();
      await closing;
    }
  });
});
