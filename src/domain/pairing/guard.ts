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

  /**
   * Counts a guess as wrong before its code is looked up, in one statement: the lock when the
   * user is locked or this guess is past the allowance, else the guess's place in the window
   * (look the code up). A right code gives its count back (`rightCode`); a wrong one keeps it
   * (`wrongCode`, with that place). Checking the lock, looking up and counting one after another
   * had let a burst of guesses sent at once all be looked up before any was counted: 19 on
   * PostgreSQL, the right code among them approved.
   */
  async reserve(userId: string): Promise<{ lock: Lock } | { guess: number }> {
    const now = this.clock.now();
    const windowOpen = now - WRONG_CODE_WINDOW_MS;
    const locked = sql<boolean>`pairing_guards.locked_until is not null and pairing_guards.locked_until > ${now}`;
    const row = await this.db
      .insertInto("pairing_guards")
      .values({ user_id: userId, failures: 1, window_start: now, locked_until: null })
      .onConflict((oc) =>
        oc.column("user_id").doUpdateSet({
          // While locked nothing counts; a window older than 10 minutes restarts.
          failures: sql<number>`case when ${locked} then pairing_guards.failures when pairing_guards.window_start <= ${windowOpen} then 1 else pairing_guards.failures + 1 end`,
          window_start: sql<number>`case when ${locked} then pairing_guards.window_start when pairing_guards.window_start <= ${windowOpen} then ${now} else pairing_guards.window_start end`,
        }),
      )
      .returning(["failures", "locked_until"])
      .executeTakeFirstOrThrow();
    const lock = lockFrom(row.locked_until === null ? null : Number(row.locked_until), now);
    if (lock !== null) return { lock };
    const guess = Number(row.failures);
    return guess > WRONG_CODES_ALLOWED ? { lock: await this.lock(userId, now) } : { guess };
  }

  /** The reserved guess was a right code: its count is given back. */
  async rightCode(userId: string): Promise<void> {
    await this.db
      .updateTable("pairing_guards")
      .set({ failures: sql<number>`case when failures > 0 then failures - 1 else 0 end` })
      .where("user_id", "=", userId)
      .execute();
  }

  /** The reserved guess (`guess`, its place in the window) was a wrong code: the lock when it was the last one allowed. */
  async wrongCode(userId: string, guess: number): Promise<Lock | null> {
    return guess >= WRONG_CODES_ALLOWED ? this.lock(userId, this.clock.now()) : null;
  }

  /** Locks approvals for LOCK_MS; the count restarts, so the next 5 guesses come no sooner. */
  private async lock(userId: string, now: number): Promise<Lock> {
    const lockedUntil = now + LOCK_MS;
    await this.db
      .updateTable("pairing_guards")
      .set({ locked_until: lockedUntil, failures: 0, window_start: now })
      .where("user_id", "=", userId)
      .where((eb) => eb.or([eb("locked_until", "is", null), eb("locked_until", "<=", now)]))
      .execute();
    return { limit: WRONG_CODES_ALLOWED, retryAfterSec: Math.ceil(LOCK_MS / 1000) };
  }
}

function lockFrom(lockedUntil: number | null, now: number): Lock | null {
  if (lockedUntil === null || lockedUntil <= now) return null;
  return { limit: WRONG_CODES_ALLOWED, retryAfterSec: Math.max(1, Math.ceil((lockedUntil - now) / 1000)) };
}
