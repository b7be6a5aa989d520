import type { Kysely } from "kysely";
import { DAY, MINUTE, type Clock } from "../../config/clock.ts";
import type { Database } from "../../store/index.ts";
import type { IssuedToken, Tokens } from "../tokens/tokens.ts";
import { VisitorTokens } from "./visitor-tokens.ts";

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
 * Anonymous visitors of an app share theirs, a new one every few minutes (visitor-tokens.ts).
 */
export class RenderTokens {
  private readonly visitors: VisitorTokens;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly tokens: Tokens,
  ) {
    this.visitors = new VisitorTokens(clock);
  }

  mintQuery(appId: string, userId: string | null): Promise<IssuedToken> {
    const mint = () => this.issue(QUERY, appId, userId);
    return userId === null ? this.visitors.get(QUERY, appId, mint) : mint();
  }

  /**
   * A fresh 7-day token for the frame. For a signed-in person the previous ones for this app get
   * 15 more minutes at most, so a tab still holding one finishes its calls and then refreshes.
   * Anonymous visitors get the app's shared frame token: nothing tells one browser from another.
   */
  async mintFrame(appId: string, userId: string | null): Promise<IssuedToken> {
    if (userId === null) return this.visitors.get(FRAME, appId, () => this.issue(FRAME, appId, null));
    return this.db.transaction().execute(async (trx) => {
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
      return this.issue(FRAME, appId, userId, trx);
    });
  }

  /**
   * POST /app/{id}/render-token: a new 7-day token; a person's presented one keeps at most 15
   * minutes. An anonymous visitor gets the app's shared frame token and the presented one keeps
   * its own expiry: it is shared too, so cutting it short would end every page that holds it (any
   * visitor could then break an app's pages every few minutes), and it grants nothing a request
   * without a token lacks.
   */
  async refresh(presented: { tokenId: string; appId: string; userId: string | null }): Promise<IssuedToken> {
    if (presented.userId === null) return this.mintFrame(presented.appId, null);
    return this.db.transaction().execute(async (trx) => {
      const graceEnd = this.clock.now() + ROTATION_GRACE_MS;
      await trx.updateTable("tokens").set({ expires_at: graceEnd }).where("id", "=", presented.tokenId).where("expires_at", ">", graceEnd).execute();
      return this.issue(FRAME, presented.appId, presented.userId, trx);
    });
  }

  /** A new render token of `form` (query: about a day; frame: 7 days), in `db`'s transaction when given. */
  private issue(form: typeof QUERY | typeof FRAME, appId: string, userId: string | null, db?: Kysely<Database>): Promise<IssuedToken> {
    const ttlMs = form === QUERY ? QUERY_TOKEN_TTL_MS : RENDER_TOKEN_TTL_MS;
    return this.tokens.issue("render", { appId, userId, name: form, ttlMs }, db);
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
