import type { FastifyRequest } from "fastify";
import type { Lock } from "../../domain/pairing/index.ts";
import { apiError, recovery, type ApiError } from "../../errors/index.ts";
import { rateLimitHeaders } from "../../http/rate-limit/index.ts";

/**
 * The 429 for a user locked out after too many wrong codes, with the same headers and retry hint
 * as a bucket refusal: the lock is the bucket that gates the request, with no tokens left.
 */
export function lockedOut(lock: Lock, request: FastifyRequest, baseUrl: string): ApiError {
  const headers = rateLimitHeaders({ allowed: false, limit: lock.limit, remaining: 0, resetSec: lock.retryAfterSec });
  return apiError(
    "rate_limited",
    `too many wrong codes: approvals are locked for ${lock.retryAfterSec} s`,
    { rung: "throttled", recovery: recovery.retry(lock.retryAfterSec, baseUrl + request.url) },
    { headers },
  );
}
