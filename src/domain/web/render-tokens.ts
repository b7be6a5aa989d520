import type { Kysely } from "kysely";
import { DAY, MINUTE, type Clock } from "../../config/clock.ts";
import type { Database } from "../../store/index.ts";
import type { IssuedToken, Tokens } from "../tokens/tokens.ts";

/** Spec Lifetimes: a render token lives 7 days; the one it replaced stays live about 15 minutes. */
export const RENDER_TOKEN_TTL_MS = 7 * DAY;
export const ROTATION_GRACE_MS = 15 * MINUTE;
/** The query render token carried in the frame's URL: about 24 hours. */
export const QUERY_TOKEN_TTL_MS = DAY;

// The token row's `name` tells the two render-token forms apart; both authenticate alike.
const FRAME = "frame";
const QUERY = "query";

/**
 * Render tokens (spec Authentication; DECISIONS §5): `svc_render_…` bound to one app and acting for
 * the person who loaded the page (null for an anonymous visitor). The shell mints a query token
 * for the frame URL; the frame mints the SDK's 7-day token, rotating that person's previous ones.
 */
export class RenderTokens {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly tokens: Tokens,
  ) {}

  mintQuery(appId: string, userId: string | null): Promise<IssuedToken> {
    return this.tokens.issue("render", { appId, userId, name: QUERY, ttlMs: QUERY_TOKEN_TTL_MS });
  }

  /**
   * A fresh 7-day token for the frame. For a signed-in person the previous ones for this app get
   * 15 more minutes at most, so a tab still holding one finishes its calls and then refreshes.
   * Anonymous visitors share `user_id` null, so there a re-render cannot tell one browser's token
   * from another's; theirs rotate only through `refresh`.
   */
  async mintFrame(appId: string, userId: string | null): Promise<IssuedToken> {
    return this.db.transaction().execute(async (trx) => {
      if (userId !== null) {
        const graceEnd = this.clock.now() + ROTATION_GRACE_MS;
        await trx
          .updateTable("tokens")
          .set({ expires_at: graceEnd })
          .where("kind", "=", "render")
          .where("name", "=", FRAME)
          .where("app_id", "=", appId)
          .where("user_id", "=", userId)
          .where("expires_at", ">", graceEnd)
          .execute();
      }
      return this.tokens.issue("render", { appId, userId, name: FRAME, ttlMs: RENDER_TOKEN_TTL_MS }, trx);
    });
  }

  /** POST /app/{id}/render-token: a new 7-day token; the presented one keeps at most 15 minutes. */
  async refresh(presented: { tokenId: string; appId: string; userId: string | null }): Promise<IssuedToken> {
    return this.db.transaction().execute(async (trx) => {
      const graceEnd = this.clock.now() + ROTATION_GRACE_MS;
      await trx.updateTable("tokens").set({ expires_at: graceEnd }).where("id", "=", presented.tokenId).where("expires_at", ">", graceEnd).execute();
      return this.tokens.issue("render", { appId: presented.appId, userId: presented.userId, name: FRAME, ttlMs: RENDER_TOKEN_TTL_MS }, trx);
    });
  }

  /** Drops render tokens that expired more than a day ago (they only answer `token_expired`). */
  async sweep(): Promise<number> {
    const result = await this.db
      .deleteFrom("tokens")
      .where("kind", "=", "render")
      .where("expires_at", "<", this.clock.now() - DAY)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
