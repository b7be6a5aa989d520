import { MINUTE, SECOND, type Clock } from "../config/clock.ts";

/** One ceiling: `capacity` tokens refilled evenly over `windowMs` (spec: 60-second windows). */
export interface BucketRule {
  name: string;
  capacity: number;
  windowMs?: number;
}

/** A bucket gating one request: the rule and the key it is counted under (IP, app, user …). */
export interface BucketCheck {
  rule: BucketRule;
  key: string;
}

export type Rung = "throttled" | "parked" | "closed";

export interface Decision {
  allowed: boolean;
  /** Capacity of the bucket with the fewest whole tokens left (DECISIONS §0b). */
  limit: number;
  /** Whole tokens left in that bucket, floored, never negative. */
  remaining: number;
  /** Seconds until its next whole token; 0 while remaining > 0. On refusal, the wait. */
  resetSec: number;
  /** On refusal: which rung of the ladder the caller is on. */
  rung?: Rung;
  /** On refusal: the rule that refused. */
  refusedBy?: BucketRule;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
  capacity: number;
  ratePerMs: number;
}

/** Penalty state of a caller that was refused and kept calling inside the wait it was given. */
interface Penalty {
  /** When the wait we last handed out ends; a call before then is "calling inside the wait". */
  waitUntil: number;
  /** The server-minted wait while parked (60 s doubling to 300 s); 0 while only throttled. */
  parkedMs: number;
}

export const PARK_FIRST_MS = 60 * SECOND;
export const PARK_MAX_MS = 300 * SECOND;

/**
 * Token buckets in memory, per process, as the spec's rate-limit table says. A request passes
 * only when every bucket gating it has a whole token, and then takes one from each.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly penalties = new Map<string, Penalty>();
  private lastSweep: number;

  constructor(private readonly clock: Clock) {
    this.lastSweep = clock.now();
  }

  /** Buckets held (each a key some caller chose, such as a login name): for tests. */
  get size(): number {
    return this.buckets.size;
  }

  take(checks: readonly BucketCheck[]): Decision {
    const now = this.clock.now();
    this.sweep(now);
    for (const check of checks) {
      const refusal = this.penaltyDecision(bucketId(check), check.rule, now);
      if (refusal !== null) return refusal;
    }
    // The buckets there are decide; a missing one is full. Only a request that passes makes its
    // buckets: keys come from the caller (a login name), and refused floods would pile them up.
    const states = checks.map((check) => ({ check, id: bucketId(check), bucket: this.refill(check, now) }));
    const empty = states.find((s): s is typeof s & { bucket: Bucket } => s.bucket !== null && s.bucket.tokens < 1);
    if (empty !== undefined) {
      const resetSec = secondsToNextToken(empty.bucket);
      this.penalties.set(empty.id, { waitUntil: now + resetSec * SECOND, parkedMs: 0 });
      return { allowed: false, limit: empty.bucket.capacity, remaining: 0, resetSec, rung: "throttled", refusedBy: empty.check.rule };
    }
    if (states.length === 0) return { allowed: true, limit: 0, remaining: 0, resetSec: 0 };
    const taken = states.map(({ check, id, bucket }) => {
      const held = bucket ?? this.create(id, check, now);
      held.tokens -= 1;
      return held;
    });

    const bucket = taken.reduce((a, b) => (Math.floor(b.tokens) < Math.floor(a.tokens) ? b : a));
    const remaining = Math.max(0, Math.floor(bucket.tokens));
    return { allowed: true, limit: bucket.capacity, remaining, resetSec: remaining > 0 ? 0 : secondsToNextToken(bucket) };
  }

  /** Forget every bucket and penalty (tests, and operators after changing limits). */
  reset(): void {
    this.buckets.clear();
    this.penalties.clear();
  }

  /**
   * A caller refused earlier: inside the wait it was given, it is parked (or closed once the
   * minted wait has reached its cap); after the wait it is forgiven.
   */
  private penaltyDecision(id: string, rule: BucketRule, now: number): Decision | null {
    const penalty = this.penalties.get(id);
    if (penalty === undefined) return null;
    if (now >= penalty.waitUntil) {
      this.penalties.delete(id);
      return null;
    }
    const closed = penalty.parkedMs >= PARK_MAX_MS;
    penalty.parkedMs = penalty.parkedMs === 0 ? PARK_FIRST_MS : Math.min(penalty.parkedMs * 2, PARK_MAX_MS);
    penalty.waitUntil = now + penalty.parkedMs;
    const resetSec = Math.ceil(penalty.parkedMs / SECOND);
    return { allowed: false, limit: rule.capacity, remaining: 0, resetSec, rung: closed ? "closed" : "parked", refusedBy: rule };
  }

  /** The bucket of `check`, refilled to `now`; null when there is none (it would be full). */
  private refill(check: BucketCheck, now: number): Bucket | null {
    const bucket = this.buckets.get(bucketId(check));
    if (bucket === undefined) return null;
    // A clock that stepped back (NTP, a host resumed) refills nothing rather than draining the
    // bucket by as much: minus an hour had emptied a 300-token bucket six times over.
    bucket.tokens = Math.min(bucket.capacity, bucket.tokens + Math.max(0, now - bucket.updatedAt) * bucket.ratePerMs);
    bucket.updatedAt = now;
    return bucket;
  }

  private create(id: string, check: BucketCheck, now: number): Bucket {
    const windowMs = check.rule.windowMs ?? MINUTE;
    const bucket = { tokens: check.rule.capacity, updatedAt: now, capacity: check.rule.capacity, ratePerMs: check.rule.capacity / windowMs };
    this.buckets.set(id, bucket);
    return bucket;
  }

  /** Drops buckets that have refilled (a full bucket is the same as none) and spent penalties. */
  private sweep(now: number): void {
    if (now - this.lastSweep < MINUTE) return;
    this.lastSweep = now;
    for (const [id, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.updatedAt) * bucket.ratePerMs >= bucket.capacity) this.buckets.delete(id);
    }
    for (const [id, penalty] of this.penalties) if (now >= penalty.waitUntil) this.penalties.delete(id);
  }
}

function bucketId(check: BucketCheck): string {
  return `${check.rule.name}\u0000${check.key}`;
}

function secondsToNextToken(bucket: Bucket): number {
  const missing = 1 - (bucket.tokens % 1);
  return Math.max(1, Math.ceil(missing / bucket.ratePerMs / SECOND));
}
