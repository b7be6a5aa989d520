import type { ExpressionBuilder, Kysely } from "kysely";
import { DAY, MINUTE, type Clock } from "../../config/clock.ts";
import type { Dialect } from "../../store/dialect.ts";
import type { Database } from "../../store/index.ts";
import { lockKey } from "../../store/locks.ts";
import { KeyedTurns } from "../../store/index.ts";
import type { IssuedToken, Tokens } from "../tokens/tokens.ts";
import { VisitorTokens } from "./visitor-tokens.ts";

/** Spec Lifetimes: a render token lives 7 days; the one it replaced stays live about 15 minutes. */
export const RENDER_TOKEN_TTL_MS = 7 * DAY;
export const ROTATION_GRACE_MS = 15 * MINUTE;
/** The query render token carried in the frame's URL: about 24 hours. */
export const QUERY_TOKEN_TTL_MS = DAY;
/**
 * Of one person's render tokens of one form for one app, the newest this many are kept: each
 * render deletes the rest. Otherwise a person's renders piled up rows for their lifetime and the
 * day the sweep waits (signed-in renders are not metered and sign-up is open: one account loading
 * one frame ~135 times a second wrote that many rows a second). Sixteen pages of one app opened
 * within a day is more than a person keeps open; past that, the oldest page's next call or frame
 * reload is refused and asks for a reload.
 */
export const RENDER_TOKENS_KEPT = 16;

// The token row's `name` tells the two render-token forms apart; both authenticate alike.
const FRAME = "frame";
const QUERY = "query";
type Form = typeof QUERY | typeof FRAME;

/** One person's render tokens of one form for one app (index tokens_render_holder). */
const heldBy = (appId: string, userId: string, form: Form) => (eb: ExpressionBuilder<Database, "tokens">) =>
  eb.and({ app_id: appId, user_id: userId, kind: "render", name: form });

/**
 * Render tokens (spec Authentication; DECISIONS §5): `svc_render_…` bound to one app and acting for
 * the person who loaded the page (null for an anonymous visitor). The shell mints a query token
 * for the frame URL; the frame mints the SDK's 7-day token, rotating that person's previous ones.
 * Anonymous visitors of an app share theirs, a new one every few minutes (visitor-tokens.ts).
 */
export class RenderTokens {
  private readonly visitors: VisitorTokens;
  private readonly turns = new KeyedTurns();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly tokens: Tokens,
  ) {
    this.visitors = new VisitorTokens(clock);
  }

  mintQuery(appId: string, userId: string | null): Promise<IssuedToken> {
    if (userId === null) return this.visitors.get(QUERY, appId, () => this.issue(QUERY, appId, null));
    return this.makingRoom(QUERY, appId, userId, (trx) => this.issue(QUERY, appId, userId, trx));
  }

  /**
   * A fresh 7-day token for the frame. For a signed-in person the previous ones for this app get
   * 15 more minutes at most, so a tab still holding one finishes its calls and then refreshes.
   * Anonymous visitors get the app's shared frame token: nothing tells one browser from another.
   */
  async mintFrame(appId: string, userId: string | null): Promise<IssuedToken> {
    if (userId === null) return this.visitors.get(FRAME, appId, () => this.issue(FRAME, appId, null));
    return this.rotateFrame(appId, userId, (trx, graceEnd) =>
      trx.updateTable("tokens").set({ expires_at: graceEnd }).where(heldBy(appId, userId, FRAME)).where("expires_at", ">", graceEnd).execute(),
    );
  }

  /**
   * POST /app/{id}/render-token: a new 7-day token; a person's presented one keeps at most 15
   * minutes. An anonymous visitor gets the app's shared frame token and the presented one keeps
   * its own expiry: it is shared too, so cutting it short would end every page that holds it (any
   * visitor could then break an app's pages every few minutes), and it grants nothing a request
   * without a token lacks.
   */
  async refresh(presented: { tokenId: string; appId: string; userId: string | null }): Promise<IssuedToken> {
    const { tokenId, appId, userId } = presented;
    if (userId === null) return this.mintFrame(appId, null);
    return this.rotateFrame(appId, userId, (trx, graceEnd) =>
      trx.updateTable("tokens").set({ expires_at: graceEnd }).where("id", "=", tokenId).where("expires_at", ">", graceEnd).execute(),
    );
  }

  /** After the trim, `cutShort` gives the tokens it replaces the grace, then a new frame token. */
  private rotateFrame(appId: string, userId: string, cutShort: (trx: Kysely<Database>, graceEnd: number) => Promise<unknown>): Promise<IssuedToken> {
    return this.makingRoom(FRAME, appId, userId, async (trx) => {
      await cutShort(trx, this.clock.now() + ROTATION_GRACE_MS);
      return this.issue(FRAME, appId, userId, trx);
    });
  }

  /**
   * In one transaction that has one person's render tokens of `form` for one app to itself: drops
   * theirs past the newest RENDER_TOKENS_KEPT - 1, then runs `issue`, which adds one.
   *
   * One person's renders of a form take turns (they are a few statements each). Side by side on
   * PostgreSQL, each trimmed what its snapshot showed, so concurrent page loads left 23-25 rows
   * where 16 were meant, and they rotated and trimmed the same rows in whatever order each plan
   * visited them, which deadlocked now and then (a page load answered 500). They queue in this
   * process first (page loads take no lane, so one person's many would each have held a pooled
   * connection while waiting for the lock), then across instances by the lock.
   */
  private makingRoom<T>(form: Form, appId: string, userId: string, issue: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    const key = `render-tokens:${appId}:${userId}:${form}`;
    return this.turns.run(key, () =>
      this.db.transaction().execute(async (trx) => {
        await lockKey(trx, this.dialect, key);
        await trimOlder(trx, form, appId, userId);
        return issue(trx);
      }),
    );
  }

  /** A new render token of `form` (query: about a day; frame: 7 days), in `db`'s transaction when given. */
  private issue(form: Form, appId: string, userId: string | null, db?: Kysely<Database>): Promise<IssuedToken> {
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

/** Deletes `userId`'s render tokens of `form` for `appId` past the newest RENDER_TOKENS_KEPT - 1 (index tokens_render_holder). */
async function trimOlder(trx: Kysely<Database>, form: Form, appId: string, userId: string): Promise<void> {
  const holder = heldBy(appId, userId, form);
  const newest = trx.selectFrom("tokens").select("id").where(holder).orderBy("created_at", "desc").orderBy("id", "desc").limit(RENDER_TOKENS_KEPT - 1);
  await trx.deleteFrom("tokens").where(holder).where("id", "not in", newest).execute();
}
