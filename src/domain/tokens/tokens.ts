import type { Kysely } from "kysely";
import { DAY, MINUTE, type Clock } from "../../config/clock.ts";
import { apiError, recovery } from "../../errors/index.ts";
import { appGone, PreparedQuery, timeOrderedUuid, type Database, type TokensTable } from "../../store/index.ts";
import { hashToken, mintToken, parseToken, type TokenKind } from "./format.ts";
import { writeAudit, type AuditContext } from "../operators/audit.ts";
import { Touches } from "../../lib/touches.ts";

// Read on every authenticated request, with the suspension of the account it speaks for: a
// suspended person's tokens are refused (DECISIONS §15), and suspending moves the token epoch, so
// a row cached for op calls is read again with it (migration 026).
const tokenByHash = new PreparedQuery(1, (db, hash: string) =>
  db.selectFrom("tokens").leftJoin("users", "users.id", "tokens.user_id").selectAll("tokens").select("users.suspended_at as user_suspended_at").where("tokens.hash", "=", hash),
);
type TokenRow = TokensTable & { user_suspended_at: number | null };
// Every anonymous create mints one.
const insertToken = new PreparedQuery(
  10,
  (db, id: string, kind: TokensTable["kind"], hash: string, prefix: string, name: string | null, source: TokensTable["source"], userId: string | null, appId: string | null, createdAt: number, expiresAt: number | null) =>
    db.insertInto("tokens").values({ id, kind, hash, prefix, name, source, user_id: userId, app_id: appId, created_at: createdAt, expires_at: expiresAt, revoked_at: null, revoked_reason: null, last_used_at: null }),
);

/** What a suspended person's sign-in, session and tokens are refused with (401 `unauthorized`). */
export const ACCOUNT_SUSPENDED = "this account is suspended by the operator";

export const USER_TOKEN_DEFAULT_DAYS = 7;
export const PAIRED_TOKEN_DAYS = 30;
/** Live user tokens one person may hold: minted and paired together (each lives 7 or 30 days). */
export const USER_TOKENS_MAX = 100;
/** How long an expired or revoked user token stays a row: it still answers `token_revoked` or `token_expired`. */
const DEAD_USER_TOKEN_KEEP_MS = 30 * DAY;
// lastUsedAt is for people reading a token list; minute precision spares a write per request.
const TOUCH_EVERY_MS = MINUTE;
/** Tokens whose last touch this process remembers (oldest forgotten first). */
const TOUCHED_MAX = 10_000;
/** Token rows kept for op calls (oldest forgotten first); see `authenticate`'s `epoch`. */
const CACHED_MAX = 10_000;

/** Who a bearer token speaks for. */
export type TokenPrincipal =
  | { kind: "user"; userId: string; tokenId: string }
  | { kind: "app"; appId: string; tokenId: string }
  | { kind: "render"; appId: string; userId: string | null; tokenId: string };

export interface UserTokenView {
  id: string;
  name: string | null;
  prefix: string;
  createdAt: number;
  expiresAt: number | null;
  lastUsedAt: number | null;
  source: "minted" | "paired";
}

export interface IssuedToken {
  id: string;
  token: string;
  createdAt: number;
  expiresAt: number | null;
}

export class Tokens {
  private readonly touched = new Touches(TOUCH_EVERY_MS, TOUCHED_MAX);
  /** Rows by hash, each with the token epoch read before it (migration 022). */
  private readonly cached = new Map<string, { row: TokenRow; epoch: number }>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly config: { readonly baseUrl: string },
  ) {}

  /**
   * The 401 ladder of DECISIONS §1: shape and checksum (no lookup) → unknown → revoked →
   * revoked by a claim → expired. Every failure is a typed ApiError.
   */
  async authenticate(plaintext: string, epoch?: number): Promise<TokenPrincipal> {
    const kind = parseToken(plaintext);
    if (kind === null || kind === "hook" || kind === "share") {
      throw apiError("unauthorized", "the bearer token is malformed", { reason: "token_malformed" });
    }
    const row = await this.rowOf(hashToken(plaintext), epoch);
    if (row === undefined || row.kind !== kind) {
      throw apiError("unauthorized", "the bearer token is not known", { reason: "token_unknown" });
    }
    if (row.revoked_at !== null) {
      if (row.revoked_reason === "claimed" && row.kind === "render") {
        throw apiError("unauthorized", "this app was claimed after this page was opened; open it again", { reason: "token_revoked_post_claim" });
      }
      if (row.revoked_reason === "claimed") {
        throw apiError(
          "unauthorized",
          "this app was claimed, so its per-app token no longer works",
          { reason: "token_revoked_post_claim", recovery: recovery.pair(this.config.baseUrl) },
        );
      }
      throw apiError("unauthorized", "the bearer token was revoked", { reason: "token_revoked" });
    }
    const now = this.clock.now();
    if (row.expires_at !== null && now >= row.expires_at) {
      throw apiError("token_expired", "the bearer token has expired");
    }
    if (row.user_suspended_at !== null) throw apiError("unauthorized", ACCOUNT_SUSPENDED);
    // The row may lag this process's own touches (50 calls at once all read null): the latest
    // one made here counts too, so a burst of calls writes the row once, not once per call.
    if (this.touched.due(row.id, now, row.last_used_at)) {
      await this.db.updateTable("tokens").set({ last_used_at: now }).where("id", "=", row.id).execute();
    }
    return toPrincipal(row);
  }

  /**
   * The token's row. Given the token epoch a caller read before asking (an op call reads it with
   * the app), a row cached under that same epoch is used as is: triggers bump the epoch whenever
   * any token is revoked, changed or deleted, so nothing that could refuse this token happened
   * since the row was read. Expiry is still checked against the clock on every call. Unknown
   * tokens are not cached (one minted a moment ago elsewhere moves no epoch).
   */
  private async rowOf(hash: string, epoch: number | undefined): Promise<TokenRow | undefined> {
    if (epoch === undefined) return tokenByHash.takeFirst(this.db, hash);
    const hit = this.cached.get(hash);
    if (hit !== undefined && hit.epoch === epoch) return hit.row;
    const row = await tokenByHash.takeFirst(this.db, hash);
    this.cached.delete(hash);
    // Read after the epoch was: the row is at least as new as the epoch it is filed under.
    if (row !== undefined) this.cached.set(hash, { row, epoch });
    if (this.cached.size > CACHED_MAX) this.cached.delete(this.cached.keys().next().value ?? hash);
    return row;
  }

  /** Given `audit` (a person asked for it), the mint and its audit row commit together (DECISIONS §15). */
  async mintUserToken(userId: string, options: { name?: string | null; days?: number; source?: "minted" | "paired" }, audit?: AuditContext): Promise<IssuedToken> {
    const days = options.days ?? USER_TOKEN_DEFAULT_DAYS;
    await this.refuseOverCap(userId);
    const mint = (db: Kysely<Database>) => this.issue("user", { userId, name: options.name ?? null, source: options.source ?? "minted", ttlMs: days * DAY }, db);
    if (audit === undefined) return mint(this.db);
    return this.db.transaction().execute(async (trx) => {
      const issued = await mint(trx);
      await writeAudit(trx, issued.createdAt, audit, { action: "token.mint", target: { kind: "token", id: issued.id }, detail: { name: options.name ?? null, days } });
      return issued;
    });
  }

  /**
   * One person's live user tokens are capped, minted and paired alike: nothing else bounded how
   * many rows one account could mint. Counted before the insert, not under a lock: a person's
   * writes on one instance already go one at a time (fair share), so only concurrent mints on
   * several instances pass it, by a few.
   */
  async refuseOverCap(userId: string, db: Kysely<Database> = this.db): Promise<void> {
    const live = await this.liveUserTokens(userId, db)
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    if (Number(live.n) >= USER_TOKENS_MAX) {
      throw apiError("too_many_requests", `you hold ${USER_TOKENS_MAX} live user tokens, the most one account may; revoke one (DELETE /api/token/{id}) before minting another`);
    }
  }

  /** Inserts a token row and returns its plaintext, the only time anyone sees it. */
  async issue(
    kind: Exclude<TokenKind, "hook" | "share">,
    options: { userId?: string | null; appId?: string | null; name?: string | null; source?: "minted" | "paired" | null; ttlMs: number | null },
    db: Kysely<Database> = this.db,
  ): Promise<IssuedToken> {
    const minted = mintToken(kind);
    const now = this.clock.now();
    // Time-ordered: a token's row is appended to its key's index rather than into a random page.
    const id = timeOrderedUuid();
    const expiresAt = options.ttlMs === null ? null : now + options.ttlMs;
    await insertToken.execute(db, id, kind, minted.hash, minted.prefix, options.name ?? null, options.source ?? null, options.userId ?? null, options.appId ?? null, now, expiresAt);
    return { id, token: minted.plaintext, createdAt: now, expiresAt };
  }

  /** The person's user tokens neither revoked nor expired: those listed, and those the cap counts. */
  private liveUserTokens(userId: string, db: Kysely<Database> = this.db) {
    const now = this.clock.now();
    return db
      .selectFrom("tokens")
      .where("user_id", "=", userId)
      .where("kind", "=", "user")
      .where("revoked_at", "is", null)
      .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)]));
  }

  async listUserTokens(userId: string): Promise<UserTokenView[]> {
    const rows = await this.liveUserTokens(userId).selectAll().orderBy("created_at", "desc").execute();
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      prefix: row.prefix,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      lastUsedAt: row.last_used_at,
      source: row.source === "paired" ? "paired" : "minted",
    }));
  }

  /**
   * Retention sweep for the scheduler: app tokens expired more than a day ago whose app does not
   * exist, those of an anonymous create whose build never published (the app's row is made only
   * then). A deleted app's go with its row; a live app's expired ones still answer token_expired.
   */
  async sweep(): Promise<number> {
    const now = this.clock.now();
    const apps = await this.db
      .deleteFrom("tokens")
      .where("kind", "=", "app")
      .where("expires_at", "<", now - DAY)
      .where(appGone("tokens"))
      .executeTakeFirst();
    // User tokens a month past their expiry or revocation: nothing reads them any more.
    const dead = now - DEAD_USER_TOKEN_KEEP_MS;
    const users = await this.db
      .deleteFrom("tokens")
      .where("kind", "=", "user")
      .where((eb) => eb.or([eb("expires_at", "<", dead), eb("revoked_at", "<", dead)]))
      .executeTakeFirst();
    return Number(apps.numDeletedRows) + Number(users.numDeletedRows);
  }

  /** Revokes one of the user's tokens at once; 404 when the user has no such live token. */
  async revokeUserToken(userId: string, tokenId: string, audit?: AuditContext): Promise<void> {
    const now = this.clock.now();
    await this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable("tokens")
        .set({ revoked_at: now, revoked_reason: "revoked" })
        .where("id", "=", tokenId)
        .where("user_id", "=", userId)
        .where("kind", "=", "user")
        .where("revoked_at", "is", null)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw apiError("not_found", "no such token");
      if (audit !== undefined) await writeAudit(trx, now, audit, { action: "token.revoke", target: { kind: "token", id: tokenId } });
    });
  }
}

function toPrincipal(row: TokensTable): TokenPrincipal {
  switch (row.kind) {
    case "user":
      return { kind: "user", userId: requireId(row.user_id, row), tokenId: row.id };
    case "app":
      return { kind: "app", appId: requireId(row.app_id, row), tokenId: row.id };
    case "render":
      return { kind: "render", appId: requireId(row.app_id, row), userId: row.user_id, tokenId: row.id };
    default:
      throw new Error(`token ${row.id} has unknown kind ${String(row.kind)}`);
  }
}

function requireId(value: string | null, row: TokensTable): string {
  if (value === null) throw new Error(`token ${row.id} of kind ${row.kind} has no subject`);
  return value;
}
