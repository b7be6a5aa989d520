import type { Kysely } from "kysely";
import { MINUTE, type Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import { writeAudit, type AuditContext } from "../operators/audit.ts";
import { deleteGrant, sweepOauthRecords } from "./records.ts";
import { Touches } from "../../lib/touches.ts";

/** A client a person let act for them, as /account lists it. */
export interface ConnectedClient {
  grantId: string;
  clientId: string;
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

// Read for /account and written once a minute per grant at most, like a token's lastUsedAt.
const TOUCH_EVERY_MS = MINUTE;
const TOUCHED_MAX = 10_000;

/**
 * The grants people gave OAuth clients (DECISIONS §17), read and ended from our side: the
 * authorization server (oidc-provider) writes them; /account lists and revokes them, and a
 * revocation takes every code, access and refresh token of the grant with it, at once.
 */
export class OauthGrants {
  private readonly touched = new Touches(TOUCH_EVERY_MS, TOUCHED_MAX);

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** A person's live grants, newest first. */
  async list(userId: string): Promise<ConnectedClient[]> {
    const rows = await this.db
      .selectFrom("oauth_records")
      .select(["id", "client_id", "label", "payload", "last_used_at"])
      .where("model", "=", "Grant")
      .where("account_id", "=", userId)
      .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", Date.now())]))
      .execute();
    return rows
      .map((row) => {
        const payload = JSON.parse(row.payload) as { iat?: number };
        return { grantId: row.id, clientId: row.client_id ?? "", name: row.label ?? row.client_id ?? "", createdAt: (payload.iat ?? 0) * 1000, lastUsedAt: row.last_used_at };
      })
      .sort((a, b) => b.createdAt - a.createdAt);
  }

  /** Names the grant as the consent page showed its client, and records who gave it. */
  async approved(grantId: string, clientName: string, audit: AuditContext): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.updateTable("oauth_records").set({ label: clientName.slice(0, 200) }).where("model", "=", "Grant").where("id", "=", grantId).execute();
      await writeAudit(trx, this.clock.now(), audit, { action: "oauth.grant", target: { kind: "grant", id: grantId }, detail: { client: clientName.slice(0, 200) } });
    });
  }

  /** Ends a person's grant with every token it gave; 404 when it is not theirs. */
  async revoke(userId: string, grantId: string, audit: AuditContext): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const grant = await trx.selectFrom("oauth_records").select(["label", "client_id"]).where("model", "=", "Grant").where("id", "=", grantId).where("account_id", "=", userId).executeTakeFirst();
      if (grant === undefined) throw apiError("not_found", "no such connected client");
      await deleteGrant(trx, grantId);
      await writeAudit(trx, this.clock.now(), audit, { action: "oauth.revoke", target: { kind: "grant", id: grantId }, detail: { client: grant.label ?? grant.client_id } });
    });
  }

  /** The hourly sweep: the authorization server's rows past their expiry (none is read after it). */
  sweep(now = Date.now()): Promise<number> {
    return sweepOauthRecords(this.db, now);
  }

  /** A grant's access token reached /mcp: its lastUsedAt moves, at most once a minute. */
  touch(grantId: string): void {
    const now = this.clock.now();
    if (!this.touched.due(grantId, now)) return;
    void this.db
      .updateTable("oauth_records")
      .set({ last_used_at: now })
      .where("model", "=", "Grant")
      .where("id", "=", grantId)
      .execute()
      .catch(() => undefined);
  }
}
