import type { Kysely, Selectable, Transaction } from "kysely";
import { DAY, type Clock } from "../../config/clock.ts";
import { timeOrderedUuid, type AuditLogTable, type Database } from "../../store/index.ts";

/** DECISIONS §15: audit rows are kept one year, swept hourly. */
export const AUDIT_KEEP_MS = 365 * DAY;

/** Who acted: a person (operators too), an app through its token, the command line, or Brickyard itself. */
export type AuditActor = { kind: "user"; id: string; handle: string | null } | { kind: "app"; id: string } | { kind: "cli" } | { kind: "system" };

/** Who acted and from where: what a route knows and passes to the action it asks for. */
export interface AuditContext {
  actor: AuditActor;
  /** The client address (`clientIp`), null off HTTP. */
  ip: string | null;
}

export type AuditAction =
  | "app.suspend"
  | "app.unsuspend"
  | "app.delete"
  | "app.claim"
  | "app.transfer"
  | "user.suspend"
  | "user.unsuspend"
  | "user.role"
  | "user.plan"
  | "token.mint"
  | "token.revoke"
  | "share.invite"
  | "share.accept"
  | "share.revoke"
  | "share_link.create"
  | "share_link.open"
  | "share_link.revoke"
  | "oauth.grant"
  | "oauth.revoke";

export interface AuditEvent {
  action: AuditAction;
  target: { kind: "app" | "user" | "token" | "share" | "grant"; id: string };
  /** What an operator needs to read the row: names, reasons, roles. Never a secret or a token's value. */
  detail?: Record<string, string | number | boolean | null>;
}

export interface AuditRow {
  id: string;
  at: number;
  actor: { kind: string; id: string | null; handle: string | null };
  action: string;
  target: { kind: string; id: string };
  ip: string | null;
  detail: Record<string, unknown>;
}

export interface AuditFilter {
  actorId?: string;
  /** An actor by handle (as written into the row). */
  actorHandle?: string;
  action?: string;
  targetId?: string;
  since?: number;
  until?: number;
  limit: number;
}

/**
 * Writes one audit row in `trx`, the transaction of the action it records: if the action rolls
 * back, so does its row, and an action that commits always has one.
 */
export async function writeAudit(trx: Transaction<Database> | Kysely<Database>, at: number, context: AuditContext, event: AuditEvent): Promise<void> {
  const { actor } = context;
  await trx
    .insertInto("audit_log")
    .values((eb) => ({
      id: timeOrderedUuid(at),
      at,
      actor_kind: actor.kind,
      actor_id: actor.kind === "user" || actor.kind === "app" ? actor.id : null,
      // A route that knows the person's handle passes it; otherwise the row reads it as written.
      actor_handle: actor.kind !== "user" ? null : actor.handle !== null ? eb.val(actor.handle) : eb.selectFrom("users").select("handle").where("id", "=", actor.id),
      action: event.action,
      target_kind: event.target.kind,
      target_id: event.target.id,
      ip: context.ip,
      detail: JSON.stringify(event.detail ?? {}),
    }))
    .execute();
}

/** Reading the audit log: operators all of it (/admin/audit), a person their own (/account/audit). */
export class AuditLog {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Newest first. */
  async list(filter: AuditFilter): Promise<AuditRow[]> {
    let q = this.db.selectFrom("audit_log").selectAll();
    if (filter.actorId !== undefined) q = q.where("actor_id", "=", filter.actorId);
    if (filter.actorHandle !== undefined) q = q.where("actor_handle", "=", filter.actorHandle);
    if (filter.action !== undefined) q = q.where("action", "=", filter.action);
    if (filter.targetId !== undefined) q = q.where("target_id", "=", filter.targetId);
    if (filter.since !== undefined) q = q.where("at", ">=", filter.since);
    if (filter.until !== undefined) q = q.where("at", "<", filter.until);
    const rows = await q.orderBy("at", "desc").orderBy("id", "desc").limit(filter.limit).execute();
    return rows.map(rowOf);
  }

  /**
   * A person's own rows (`/account/audit`): what they did, and what was done to their account or
   * to an app they own now. Newest first.
   */
  async listForPerson(userId: string, limit: number): Promise<AuditRow[]> {
    const rows = await this.db
      .selectFrom("audit_log")
      .selectAll()
      .where((eb) =>
        eb.or([eb("actor_id", "=", userId), eb("target_id", "=", userId), eb("target_id", "in", eb.selectFrom("apps").select("id").where("owner_user_id", "=", userId))]),
      )
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return rows.map(rowOf);
  }

  /** The hourly sweep: rows older than a year go. */
  async sweep(): Promise<number> {
    const result = await this.db.deleteFrom("audit_log").where("at", "<", this.clock.now() - AUDIT_KEEP_MS).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function rowOf(row: Selectable<AuditLogTable>): AuditRow {
  return {
    id: row.id,
    at: Number(row.at),
    actor: { kind: row.actor_kind, id: row.actor_id, handle: row.actor_handle },
    action: row.action,
    target: { kind: row.target_kind, id: row.target_id },
    ip: row.ip,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
  };
}
