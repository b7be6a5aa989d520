import type { Clock } from "../../config/clock.ts";
import { apiError, recovery, type ApiError, type Plan } from "../../errors/index.ts";
import { PLAN_LIMITS } from "../../config/plans.ts";
import { RateLimiter } from "../../lib/rate-limit.ts";

// Waiters queued per app at most; past that a caller is refused at once, as if it could not wait
// (an agent firing thousands of tool calls at one app must not hold thousands of requests open).
export const MAX_WAITING_PER_APP = 256;

/** A run slot held: `release` exactly once; `waited` when it was taken only after a wait. */
export interface RunSlot {
  release: () => void;
  waited: boolean;
}

interface Waiter {
  /** Hands the waiter a slot, already counted as running. */
  take: () => void;
  timer: NodeJS.Timeout;
}

/**
 * App run ceilings, per app and per process (DECISIONS §4): concurrent runs and runs per
 * 60-second window, from the owner's plan. Breach → 429 `app_busy`.
 *
 * A caller that may wait (a webhook delivery, DECISIONS §8 `deferred`; an agent's tool call,
 * which the spec leaves unmetered) queues for a concurrent-run slot instead, first come first
 * served: a slot that frees goes to the oldest waiter before anyone else can take it, so callers
 * that cannot wait never slip in between. The per-minute ceiling refuses at once either way.
 */
export class RunCeilings {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly windows: RateLimiter;

  constructor(clock: Clock) {
    this.windows = new RateLimiter(clock);
  }

  /** Forgets every app's runs in its current window (operators after changing limits; benchmarks). */
  resetWindows(): void {
    this.windows.reset();
  }

  /** Takes a run slot, waiting up to `waitMs` (real time) for one while all are taken. */
  async acquire(appId: string, plan: Plan, retryUrl: string, waitMs = 0): Promise<RunSlot> {
    const limits = PLAN_LIMITS[plan];
    this.admitWaiters(appId, limits.concurrent_runs);
    const running = this.running.get(appId) ?? 0;
    const queued = this.waiting.get(appId)?.length ?? 0;
    let waited = false;
    if (running >= limits.concurrent_runs || queued > 0) {
      if (waitMs <= 0 || queued >= MAX_WAITING_PER_APP) throw busy(running, limits.concurrent_runs, retryUrl);
      await this.slotFreed(appId, waitMs, () => busy(this.running.get(appId) ?? running, limits.concurrent_runs, retryUrl));
      waited = true;
    } else {
      this.running.set(appId, running + 1);
    }
    const release = this.releaser(appId, limits.concurrent_runs);
    const decision = this.windows.take([{ rule: { name: "runs_per_window", capacity: limits.runs_per_minute }, key: appId }]);
    if (!decision.allowed) {
      release();
      const wait = decision.resetSec;
      throw apiError(
        "app_busy",
        `this app ran ${limits.runs_per_minute} operations in the last minute; retry in ${wait} s`,
        { limit: "runs_per_window", observed: limits.runs_per_minute + 1, allowed: limits.runs_per_minute, rung: decision.rung ?? "throttled", recovery: recovery.retry(wait, retryUrl) },
        { headers: { "Retry-After": String(wait), "RateLimit-Limit": String(decision.limit), "RateLimit-Remaining": "0", "RateLimit-Reset": String(wait) }, closeConnection: decision.rung === "closed" },
      );
    }
    return { release, waited };
  }

  /** Resolves once `admitWaiters` hands this caller a slot; rejects with `refusal()` after `waitMs`. */
  private slotFreed(appId: string, waitMs: number, refusal: () => ApiError): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let queue = this.waiting.get(appId);
      if (queue === undefined) this.waiting.set(appId, (queue = []));
      const waiter: Waiter = {
        take: resolve,
        timer: setTimeout(() => {
          const left = (this.waiting.get(appId) ?? []).filter((w) => w !== waiter);
          if (left.length === 0) this.waiting.delete(appId);
          else this.waiting.set(appId, left);
          reject(refusal());
        }, waitMs),
      };
      queue.push(waiter);
    });
  }

  /**
   * Free slots go to queued waiters, oldest first: after each release, and at each acquire (the
   * owner's plan may have grown while they waited).
   */
  private admitWaiters(appId: string, allowed: number): void {
    const queue = this.waiting.get(appId);
    while (queue !== undefined && queue.length > 0 && (this.running.get(appId) ?? 0) < allowed) {
      const next = queue.shift();
      if (queue.length === 0) this.waiting.delete(appId);
      if (next === undefined) break;
      this.running.set(appId, (this.running.get(appId) ?? 0) + 1);
      clearTimeout(next.timer);
      next.take();
    }
  }

  private releaser(appId: string, allowed: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.running.get(appId) ?? 1) - 1;
      if (left <= 0) this.running.delete(appId);
      else this.running.set(appId, left);
      this.admitWaiters(appId, allowed);
    };
  }
}

function busy(running: number, allowed: number, retryUrl: string): ApiError {
  return apiError(
    "app_busy",
    `this app already runs ${running} operations at once; the ceiling is ${allowed}`,
    { limit: "concurrent_runs", observed: running + 1, allowed, rung: "throttled", recovery: recovery.retry(1, retryUrl) },
    { headers: { "Retry-After": "1" } },
  );
}
