import type { Kysely } from "kysely";
import { sql } from "kysely";
import { MINUTE, type Clock } from "../../config/clock.ts";
import type { Database } from "../../store/index.ts";

export const WRONG_CODES_ALLOWED = 5;
export const WRONG_CODE_WINDOW_MS = 10 * MINUTE;
export const LOCK_MS = 10 * MINUTE;

export interface Lock {
  /** The number of wrong codes that trips the lock (reported as the refusal's limit). */
  limit: number;
  /** Whole seconds until approvals open again, at least 1. */
  retryAfterSec: number;
}

/**
 * The brute-force brake on user codes: 5 wrong codes per user per 10 minutes lock that user's
 * approvals for 10 minutes. Kept in the database, not in memory, so every instance sees it.
 */
export class ApprovalGuard {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async lockOf(userId: string): Promise<Lock | null> {
    const row = await this.db.selectFrom("pairing_guards").select("locked_until").where("user_id", "=", userId).executeTakeFirst();
    return lockFrom(row?.locked_until ?? null, this.clock.now());
  }

  /** Counts one wrong code; returns the lock when this one tripped it. */
  async recordWrongCode(userId: string): Promise<Lock | null> {
    const now = this.clock.now();
    const windowOpen = now - WRONG_CODE_WINDOW_MS;
    // One statement, so concurrent wrong guesses each count: a window older than 10 minutes restarts.
    const row = await this.db
      .insertInto("pairing_guards")
      .values({ user_id: userId, failures: 1, window_start: now, locked_until: null })
      .onConflict((oc) =>
        oc.column("user_id").doUpdateSet({
          failures: sql<number>`case when pairing_guards.window_start <= ${windowOpen} then 1 else pairing_guards.failures + 1 end`,
          window_start: sql<number>`case when pairing_guards.window_start <= ${windowOpen} then ${now} else pairing_guards.window_start end`,
        }),
      )
      .returning("failures")
      .executeTakeFirstOrThrow();
    if (row.failures < WRONG_CODES_ALLOWED) return null;
    const lockedUntil = now + LOCK_MS;
    // The lock restarts the count, so the next 5 guesses come no sooner than 10 minutes from now.
    await this.db
      .updateTable("pairing_guards")
      .set({ locked_until: lockedUntil, failures: 0, window_start: now })
      .where("user_id", "=", userId)
      .execute();
    return lockFrom(lockedUntil, now);
  }
}

function lockFrom(lockedUntil: number | null, now: number): Lock | null {
  if (lockedUntil === null || lockedUntil <= now) return null;
  return { limit: WRONG_CODES_ALLOWED, retryAfterSec: Math.max(1, Math.ceil((lockedUntil - now) / 1000)) };
}
