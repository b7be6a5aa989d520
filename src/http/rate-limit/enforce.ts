import type { FastifyReply, FastifyRequest } from "fastify";
import { apiError, recovery, type ErrorKind } from "../../errors/index.ts";
import type { BucketCheck, Decision, RateLimiter } from "./buckets.ts";

export interface RateLimitOptions {
  /** The 429 kind: `rate_limited` unless the spec names another for the route. */
  kind?: Extract<ErrorKind, "rate_limited" | "too_many_requests" | "app_busy">;
  /** For `app_busy`: the ceiling's name (`render_token_refresh`, `runs_per_window`, …). */
  limitName?: string;
  /** Absolute base for `retry_after_url`. */
  baseUrl: string;
}

/**
 * Takes a token from every bucket gating the request and writes the spec's rate-limit headers;
 * throws the 429 envelope (with the same headers) when any bucket is empty or the caller parked.
 */
export function enforceRateLimit(
  limiter: RateLimiter,
  request: FastifyRequest,
  reply: FastifyReply,
  checks: readonly BucketCheck[],
  options: RateLimitOptions,
): Decision {
  const decision = takeOrRefuse(limiter, request, checks, options);
  void reply.headers(rateLimitHeaders(decision));
  return decision;
}

/**
 * `enforceRateLimit` without writing the headers of a request let through: for a route gated by
 * buckets taken at different steps, which writes the headers of the tighter one once.
 */
export function takeOrRefuse(limiter: RateLimiter, request: FastifyRequest, checks: readonly BucketCheck[], options: RateLimitOptions): Decision {
  const decision = limiter.take(checks);
  if (decision.allowed) return decision;
  const headers = rateLimitHeaders(decision);

  const kind = options.kind ?? "rate_limited";
  const retryUrl = options.baseUrl + request.url;
  const capacity = decision.refusedBy?.capacity ?? decision.limit;
  const busyFields =
    kind === "app_busy"
      ? { limit: options.limitName ?? decision.refusedBy?.name ?? "runs_per_window", observed: capacity + 1, allowed: capacity }
      : {};
  throw apiError(
    kind,
    decision.rung === "throttled"
      ? `too many requests; retry in ${decision.resetSec} s`
      : `too many requests while told to wait; the wait is now ${decision.resetSec} s`,
    { ...busyFields, rung: decision.rung ?? "throttled", recovery: recovery.retry(decision.resetSec, retryUrl) },
    { headers, closeConnection: decision.rung === "closed" },
  );
}

export function rateLimitHeaders(decision: Decision): Record<string, string> {
  const headers: Record<string, string> = {
    "RateLimit-Limit": String(decision.limit),
    "RateLimit-Remaining": String(decision.remaining),
    "RateLimit-Reset": String(decision.resetSec),
    "X-RateLimit-Limit": String(decision.limit),
    "X-RateLimit-Remaining": String(decision.remaining),
    "X-RateLimit-Reset": String(decision.resetSec),
  };
  if (!decision.allowed) headers["Retry-After"] = String(decision.resetSec);
  return headers;
}
