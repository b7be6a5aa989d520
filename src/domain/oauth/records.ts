import { sql, type Kysely } from "kysely";
import { DAY } from "../../config/clock.ts";
import type { Database } from "../../store/index.ts";

/** How long a used code or refresh token is kept: its replay within that time ends the grant. */
export const CONSUMED_KEPT_MS = DAY;

/** A record as oidc-provider hands it over: its own JSON, with the fields we index. */
type Payload = Record<string, unknown> & { grantId?: string; uid?: string; accountId?: string; clientId?: string; consumed?: number; userCode?: string };

/**
 * oidc-provider's storage port (its `Adapter`), on our store: one instance per model name
 * (Client, Grant, AccessToken, …), every row in `oauth_records` (migration 027). Rows past their
 * expiry are never returned, and the hourly sweep deletes them (`sweepOauthRecords`).
 */
export class OauthRecords {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly model: string,
  ) {}

  /** The adapter class oidc-provider constructs per model name. */
  static adapterFor(db: Kysely<Database>): new (model: string) => OauthRecords {
    return class extends OauthRecords {
      constructor(model: string) {
        super(db, model);
      }
    };
  }

  async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
    const row = {
      payload: JSON.stringify(payload),
      grant_id: typeof payload.grantId === "string" ? payload.grantId : null,
      uid: typeof payload.uid === "string" ? payload.uid : null,
      account_id: typeof payload.accountId === "string" ? payload.accountId : null,
      client_id: typeof payload.clientId === "string" ? payload.clientId : null,
      expires_at: typeof expiresIn === "number" ? Date.now() + expiresIn * 1000 : null,
    };
    await this.db
      .insertInto("oauth_records")
      // A client's row notes when it registered: the sweep drops clients never used for a week.
      .values({ model: this.model, id, ...row, consumed_at: null, last_used_at: this.model === "Client" ? Date.now() : null, label: null })
      .onConflict((c) => c.columns(["model", "id"]).doUpdateSet(row))
      .execute();
  }

  async find(id: string): Promise<Payload | undefined> {
    const row = await this.db.selectFrom("oauth_records").select(["payload", "consumed_at", "expires_at"]).where("model", "=", this.model).where("id", "=", id).executeTakeFirst();
    return this.live(row);
  }

  async findByUid(uid: string): Promise<Payload | undefined> {
    const row = await this.db.selectFrom("oauth_records").select(["payload", "consumed_at", "expires_at"]).where("model", "=", this.model).where("uid", "=", uid).executeTakeFirst();
    return this.live(row);
  }

  // Device flow only, which is off.
  findByUserCode(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  /**
   * Marks a code or refresh token used, once: two redemptions racing each read it unused, and
   * the second to get here finds it taken. That is a replay, as a second use is: the grant dies
   * with every token it gave, and the library answers `invalid_grant`.
   */
  async consume(id: string): Promise<void> {
    const now = Date.now();
    // A used token is kept a day, long enough to catch its replay, not its 30 days: every
    // refresh rotates, and each kept row was one more for the life of the grant.
    const until = now + CONSUMED_KEPT_MS;
    const taken = await this.db
      .updateTable("oauth_records")
      .set({ consumed_at: now, expires_at: sql<number>`case when expires_at is null or expires_at > ${until} then ${until} else expires_at end` })
      .where("model", "=", this.model)
      .where("id", "=", id)
      .where("consumed_at", "is", null)
      .executeTakeFirst();
    if (taken.numUpdatedRows > 0n) return;
    const row = await this.db.selectFrom("oauth_records").select("grant_id").where("model", "=", this.model).where("id", "=", id).executeTakeFirst();
    if (row?.grant_id != null) await deleteGrant(this.db, row.grant_id);
    const { errors } = await import("oidc-provider");
    throw new errors.InvalidGrant(`${this.model === "RefreshToken" ? "refresh token" : "authorization code"} already used`);
  }

  async destroy(id: string): Promise<void> {
    await this.db.deleteFrom("oauth_records").where("model", "=", this.model).where("id", "=", id).execute();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db.deleteFrom("oauth_records").where("model", "=", this.model).where("grant_id", "=", grantId).execute();
  }

  private live(row: { payload: string; consumed_at: number | null; expires_at: number | null } | undefined): Payload | undefined {
    if (row === undefined || (row.expires_at !== null && row.expires_at <= Date.now())) return undefined;
    const payload = JSON.parse(row.payload) as Payload;
    // oidc-provider reads `consumed` (epoch seconds) to refuse a second use.
    return row.consumed_at === null ? payload : { ...payload, consumed: Math.floor(row.consumed_at / 1000) };
  }
}

/** A grant and every code, access and refresh token it gave, in `db` (a transaction, when given one). */
export async function deleteGrant(db: Kysely<Database>, grantId: string): Promise<void> {
  await db.deleteFrom("oauth_records").where("grant_id", "=", grantId).execute();
  await db.deleteFrom("oauth_records").where("model", "=", "Grant").where("id", "=", grantId).execute();
}

/** A registered client no grant names is dropped this long after it registered. */
export const UNUSED_CLIENT_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * The hourly sweep: rows past their expiry (which find() already ignores), and clients that
 * registered over a week ago and hold no grant (registration is open to anyone; a client in use
 * has a grant, which lives as long as its refresh tokens).
 */
export async function sweepOauthRecords(db: Kysely<Database>, now: number): Promise<number> {
  const expired = await db.deleteFrom("oauth_records").where("expires_at", "<=", now).executeTakeFirst();
  const unused = await db
    .deleteFrom("oauth_records")
    .where("model", "=", "Client")
    .where("last_used_at", "<", now - UNUSED_CLIENT_MS)
    .where((eb) => eb.not(eb.exists(eb.selectFrom("oauth_records as g").select("g.id").where("g.model", "=", "Grant").whereRef("g.client_id", "=", "oauth_records.id"))))
    .executeTakeFirst();
  return Number(expired.numDeletedRows) + Number(unused.numDeletedRows);
}
