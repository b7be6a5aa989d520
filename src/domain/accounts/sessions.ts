import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { DAY, MINUTE, type Clock } from "../../config/clock.ts";
import type { Database } from "../../store/index.ts";
import { apiError } from "../../errors/index.ts";
import { hashToken } from "../tokens/format.ts";
import { ACCOUNT_SUSPENDED } from "../tokens/tokens.ts";

export const SESSION_ABSOLUTE_MS = 30 * DAY;
export const SESSION_IDLE_MS = 7 * DAY;
// Touching last_seen_at on every request would turn each read into a write; a minute of slack
// on a 7-day idle window is invisible.
const TOUCH_EVERY_MS = MINUTE;

export interface SessionLookup {
  userId: string;
  sessionId: string;
}

export class Sessions {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Deletes sessions past their absolute end (an idle one reaches it within 30 days too): a row per sign-in otherwise stayed for ever. */
  async sweep(): Promise<number> {
    const result = await this.db.deleteFrom("sessions").where("expires_at", "<=", this.clock.now()).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Starts a session and returns the cookie value (shown to the browser only). */
  async create(userId: string): Promise<string> {
    const value = randomBytes(32).toString("base64url");
    const now = this.clock.now();
    await this.db
      .insertInto("sessions")
      .values({ id: hashToken(value), user_id: userId, created_at: now, last_seen_at: now, expires_at: now + SESSION_ABSOLUTE_MS })
      .execute();
    return value;
  }

  /**
   * The live session for a cookie value, or null when unknown, ended, idle or past its end.
   * A suspended person's session is refused (401 `unauthorized`), not ended: it works again if
   * the operator lifts the suspension before it expires.
   */
  async resolve(cookieValue: string): Promise<SessionLookup | null> {
    const id = hashToken(cookieValue);
    const row = await this.db
      .selectFrom("sessions")
      .innerJoin("users", "users.id", "sessions.user_id")
      .selectAll("sessions")
      .select("users.suspended_at")
      .where("sessions.id", "=", id)
      .executeTakeFirst();
    if (row === undefined) return null;
    if (row.suspended_at !== null) throw apiError("unauthorized", ACCOUNT_SUSPENDED);
    const now = this.clock.now();
    if (now >= row.expires_at || now >= row.last_seen_at + SESSION_IDLE_MS) {
      await this.db.deleteFrom("sessions").where("id", "=", id).execute();
      return null;
    }
    if (now - row.last_seen_at >= TOUCH_EVERY_MS) {
      await this.db.updateTable("sessions").set({ last_seen_at: now }).where("id", "=", id).execute();
    }
    return { userId: row.user_id, sessionId: id };
  }

  async end(cookieValue: string): Promise<void> {
    await this.db.deleteFrom("sessions").where("id", "=", hashToken(cookieValue)).execute();
  }
}
