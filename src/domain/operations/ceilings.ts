import type { Clock } from "../../config/clock.ts";
import { apiError, recovery, type Plan } from "../../errors/index.ts";
import { PLAN_LIMITS } from "../plans.ts";
import { RateLimiter } from "../rate-limit/buckets.ts";

/**
 * App run ceilings, per app and per process (DECISIONS §4): concurrent runs and runs per
 * 60-second window, from the owner's plan. Breach → 429 `app_busy`.
 */
export class RunCeilings {
  private readonly running = new Map<string, number>();
  private readonly windows: RateLimiter;

  constructor(clock: Clock) {
    this.windows = new RateLimiter(clock);
  }

  /** Takes a run slot; the caller must call the returned release exactly once. */
  acquire(appId: string, plan: Plan, retryUrl: string): () => void {
    const limits = PLAN_LIMITS[plan];
    const running = this.running.get(appId) ?? 0;
    if (running >= limits.concurrent_runs) {
      throw apiError(
        "app_busy",
        `this app already runs ${running} operations at once; the ceiling is ${limits.concurrent_runs}`,
        { limit: "concurrent_runs", observed: running + 1, allowed: limits.concurrent_runs, rung: "throttled", recovery: recovery.retry(1, retryUrl) },
        { headers: { "Retry-After": "1" } },
      );
    }
    const decision = this.windows.take([{ rule: { name: "runs_per_window", capacity: limits.runs_per_minute }, key: appId }]);
    if (!decision.allowed) {
      const wait = decision.resetSec;
      throw apiError(
        "app_busy",
        `this app ran ${limits.runs_per_minute} operations in the last minute; retry in ${wait} s`,
        { limit: "runs_per_window", observed: limits.runs_per_minute + 1, allowed: limits.runs_per_minute, rung: decision.rung ?? "throttled", recovery: recovery.retry(wait, retryUrl) },
        { headers: { "Retry-After": String(wait), "RateLimit-Limit": String(decision.limit), "RateLimit-Remaining": "0", "RateLimit-Reset": String(wait) }, closeConnection: decision.rung === "closed" },
      );
    }
    this.running.set(appId, running + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.running.get(appId) ?? 1) - 1;
      if (left <= 0) this.running.delete(appId);
      else this.running.set(appId, left);
    };
  }
}
