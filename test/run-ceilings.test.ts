import { describe, expect, it } from "vitest";
import { ManualClock } from "../src/config/clock.ts";
import { MAX_WAITING_PER_APP, RunCeilings, type RunSlot } from "../src/runtime/operations/ceilings.ts";
import { PLAN_LIMITS } from "../src/config/plans.ts";
import type { ApiError } from "../src/errors/index.ts";

const URL = "http://localhost/app/a/api/op";
const FREE = PLAN_LIMITS.free.concurrent_runs;

/** Fills every concurrent-run slot of app "a" on the free plan. */
async function full(ceilings: RunCeilings): Promise<RunSlot[]> {
  return Promise.all(Array.from({ length: FREE }, () => ceilings.acquire("a", "free", URL)));
}

describe("RunCeilings: waiting for a concurrent-run slot", () => {
  it("refuses a caller that may not wait, with the ceiling's figures", async () => {
    const ceilings = new RunCeilings(new ManualClock());
    await full(ceilings);
    await expect(ceilings.acquire("a", "free", URL)).rejects.toMatchObject({ kind: "app_busy", status: 429, fields: { limit: "concurrent_runs", observed: FREE + 1, allowed: FREE } });
    // Another app has its own slots.
    expect((await ceilings.acquire("b", "free", URL)).waited).toBe(false);
  });

  it("hands a finishing run's slot to the oldest waiter, and never to a caller arriving meanwhile", async () => {
    const ceilings = new RunCeilings(new ManualClock());
    const held = await full(ceilings);
    const order: string[] = [];
    const first = ceilings.acquire("a", "free", URL, 5_000).then((slot) => (order.push("first"), slot));
    const second = ceilings.acquire("a", "free", URL, 5_000).then((slot) => (order.push("second"), slot));
    held[0]?.release();
    // A caller that cannot wait still finds the app full: the freed slot went to "first".
    await expect(ceilings.acquire("a", "free", URL)).rejects.toMatchObject({ kind: "app_busy" });
    expect(await first).toMatchObject({ waited: true });
    held[1]?.release();
    expect(await second).toMatchObject({ waited: true });
    expect(order).toEqual(["first", "second"]);
    // Releasing twice frees one slot, not two.
    const slot = await second;
    slot.release();
    slot.release();
    await expect(ceilings.acquire("a", "free", URL)).resolves.toMatchObject({ waited: false });
    await expect(ceilings.acquire("a", "free", URL)).rejects.toMatchObject({ kind: "app_busy" });
  });

  it("gives up after the wait with app_busy, leaving the queue to those still waiting", async () => {
    const ceilings = new RunCeilings(new ManualClock());
    const held = await full(ceilings);
    const impatient = ceilings.acquire("a", "free", URL, 20);
    const patient = ceilings.acquire("a", "free", URL, 5_000);
    const refusal = (await impatient.catch((error: unknown) => error)) as ApiError;
    expect([refusal.status, refusal.kind, refusal.fields.limit]).toEqual([429, "app_busy", "concurrent_runs"]);
    held[0]?.release();
    expect(await patient).toMatchObject({ waited: true });
  });

  it("queues at most MAX_WAITING_PER_APP callers per app and refuses the next at once", async () => {
    const ceilings = new RunCeilings(new ManualClock());
    const held = await full(ceilings);
    const waiting = Array.from({ length: MAX_WAITING_PER_APP }, () => ceilings.acquire("a", "free", URL, 5_000));
    await expect(ceilings.acquire("a", "free", URL, 5_000)).rejects.toMatchObject({ kind: "app_busy", fields: { limit: "concurrent_runs" } });
    // Every queued caller still gets its turn as runs finish.
    for (let i = 0; i < MAX_WAITING_PER_APP; i++) {
      (i < held.length ? held[i] : await waiting[i - held.length])?.release();
    }
    const slots = await Promise.all(waiting);
    expect(slots.every((slot) => slot.waited)).toBe(true);
  });

  it("lets waiters take slots that a larger plan opened before any newcomer does", async () => {
    const ceilings = new RunCeilings(new ManualClock());
    await full(ceilings);
    const waiter = ceilings.acquire("a", "free", URL, 5_000);
    // The owner upgraded: pro allows more at once. The waiter is admitted first, then the newcomer.
    const newcomer = await ceilings.acquire("a", "pro", URL);
    expect(newcomer.waited).toBe(false);
    expect(await waiter).toMatchObject({ waited: true });
  });
});

describe("RunCeilings: runs per minute", () => {
  it("refuses the run past the plan's minute, and resetWindows forgets the minute but not the runs holding slots", async () => {
    const ceilings = new RunCeilings(new ManualClock());
    const perMinute = PLAN_LIMITS.free.runs_per_minute;
    for (let i = 0; i < perMinute; i++) (await ceilings.acquire("a", "free", URL)).release();
    await expect(ceilings.acquire("a", "free", URL)).rejects.toMatchObject({ kind: "app_busy", status: 429, fields: { limit: "runs_per_window", allowed: perMinute } });
    ceilings.resetWindows();
    const held = await full(ceilings);
    // Still counted as running: the reset touched only the minute.
    ceilings.resetWindows();
    await expect(ceilings.acquire("a", "free", URL)).rejects.toMatchObject({ kind: "app_busy", fields: { limit: "concurrent_runs" } });
    held[0]?.release();
    await expect(ceilings.acquire("a", "free", URL)).resolves.toMatchObject({ waited: false });
  });
});
