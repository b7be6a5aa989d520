import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { isUniqueViolation, type Database } from "../../store/index.ts";

/** How long a key answers with its first result (DECISIONS §10, as for copies). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const MAX_KEY_LENGTH = 200;
/**
 * A claim still without its answer after this long was left by an instance that died mid-write:
 * its key is free again. Far longer than any write takes (the request timeout is 2 minutes by
 * default; a write that needs a build answers 202 at once).
 */
export const CLAIM_ABANDONED_MS = 10 * 60 * 1000;

/** A response as it is replayed: status, JSON body, and the ETag when it had one. */
export interface StoredResponse {
  status: number;
  body: unknown;
  etag: string | null;
}

/** Where a request with an Idempotency-Key stands: answered before (replay) or now being answered. */
export type Claim = { replay: StoredResponse } | { pending: { complete(response: StoredResponse): Promise<void>; abandon(): Promise<void> } };

/**
 * Idempotency-Key for writes (DECISIONS §10): the first request with a key claims it; a repeat
 * with the same body replays its answer, one with another body is 409 `idempotency_conflict`,
 * and one while the first is still under way is 409 too (retry). Only successes are kept: a
 * refused write leaves the key free, so a corrected retry can use it.
 */
export class Idempotency {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async claim(scope: string, requestLine: string, key: string, body: unknown): Promise<Claim> {
    if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
      throw apiError("invalid_request", `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters`);
    }
    const bodyHash = createHash("sha256").update(JSON.stringify(body ?? null)).digest("hex");
    const where = { scope, request_line: requestLine, idempotency_key: key };
    const now = this.clock.now();
    await this.db
      .deleteFrom("idempotency_records")
      .where("scope", "=", scope)
      .where("request_line", "=", requestLine)
      .where("idempotency_key", "=", key)
      .where((eb) => eb.or([eb("created_at", "<=", now - IDEMPOTENCY_TTL_MS), eb.and([eb("status", "is", null), eb("created_at", "<=", now - CLAIM_ABANDONED_MS)])]))
      .execute();
    try {
      await this.db.insertInto("idempotency_records").values({ ...where, body_hash: bodyHash, status: null, response: null, etag: null, created_at: now }).execute();
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      return this.replay(scope, requestLine, key, bodyHash);
    }
    // This claim's row, not one a later request made after taking the key over (CLAIM_ABANDONED_MS).
    const matching = () =>
      this.db.updateTable("idempotency_records").where("scope", "=", scope).where("request_line", "=", requestLine).where("idempotency_key", "=", key).where("created_at", "=", now);
    return {
      pending: {
        complete: async (response) => {
          await matching().set({ status: response.status, response: JSON.stringify(response.body), etag: response.etag }).execute();
        },
        abandon: async () => {
          await this.db
            .deleteFrom("idempotency_records")
            .where("scope", "=", scope)
            .where("request_line", "=", requestLine)
            .where("idempotency_key", "=", key)
            .where("created_at", "=", now)
            .where("status", "is", null)
            .execute();
        },
      },
    };
  }

  private async replay(scope: string, requestLine: string, key: string, bodyHash: string): Promise<Claim> {
    const row = await this.db
      .selectFrom("idempotency_records")
      .selectAll()
      .where("scope", "=", scope)
      .where("request_line", "=", requestLine)
      .where("idempotency_key", "=", key)
      .executeTakeFirst();
    if (row === undefined) throw apiError("idempotency_conflict", "a request with this Idempotency-Key just finished without an answer to replay; retry");
    if (row.body_hash !== bodyHash) throw apiError("idempotency_conflict", "this Idempotency-Key was used with another body; use a new key");
    if (row.status === null || row.response === null) throw apiError("idempotency_conflict", "a request with this Idempotency-Key is still under way; retry in a moment");
    return { replay: { status: Number(row.status), body: JSON.parse(row.response) as unknown, etag: row.etag } };
  }

  /** Forgets keys past their 24 hours. */
  async sweep(): Promise<number> {
    const result = await this.db.deleteFrom("idempotency_records").where("created_at", "<=", this.clock.now() - IDEMPOTENCY_TTL_MS).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
