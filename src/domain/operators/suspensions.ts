import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import { writeAudit, type AuditContext } from "./audit.ts";

/** A suspension's reason: the owner reads it in the console, operators in /admin. */
export const REASON_MAX_CHARS = 500;

/** Where a suspension must be felt at once beyond the next request: the app's open event streams. */
export interface SuspensionListener {
  suspended(appId: string): void;
}

/**
 * DECISIONS §15: an operator stops an app, or an account and every app it owns, and lifts it
 * again. The flag is a column read with the app (and its owner) on every request, so it holds
 * from the next request on every instance; open event streams are told through the live events
 * bus, which reaches every instance. Nothing is deleted: data, tokens and sessions wait. Each
 * change and its audit row commit together.
 */
export class Suspensions {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly listener: SuspensionListener,
  ) {}

  async suspendApp(appId: string, reason: unknown, audit: AuditContext): Promise<void> {
    const why = reasonOf(reason);
    const now = this.clock.now();
    await this.db.transaction().execute(async (trx) => {
      const result = await trx.updateTable("apps").set({ suspended_at: now, suspended_reason: why }).where("id", "=", appId).executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw apiError("app_not_found", `no app ${appId}`);
      await writeAudit(trx, now, audit, { action: "app.suspend", target: { kind: "app", id: appId }, detail: { reason: why } });
    });
    this.listener.suspended(appId);
  }

  async unsuspendApp(appId: string, audit: AuditContext): Promise<void> {
    const now = this.clock.now();
    await this.db.transaction().execute(async (trx) => {
      const app = await trx
        .selectFrom("apps")
        .leftJoin("users", "users.id", "apps.owner_user_id")
        .select(["apps.suspended_at", "users.suspended_at as owner_suspended_at", "users.handle"])
        .where("apps.id", "=", appId)
        .executeTakeFirst();
      if (app === undefined) throw apiError("app_not_found", `no app ${appId}`);
      // An app stopped only by its owner's suspension has none of its own to lift: saying "lifted"
      // would leave the operator believing it runs again.
      if (app.suspended_at === null && app.owner_suspended_at !== null) {
        throw apiError("invalid_request", `this app is stopped because its owner's account (@${app.handle ?? "?"}) is suspended; lift that suspension instead`);
      }
      // Not suspended at all: nothing changes, and nothing is recorded as changed.
      if (app.suspended_at === null) return;
      await trx.updateTable("apps").set({ suspended_at: null, suspended_reason: null }).where("id", "=", appId).execute();
      await writeAudit(trx, now, audit, { action: "app.unsuspend", target: { kind: "app", id: appId } });
    });
  }

  /** The account's sign-in, sessions and tokens are refused, and every app it owns stops. */
  async suspendUser(handle: string, reason: unknown, audit: AuditContext): Promise<void> {
    const why = reasonOf(reason);
    const now = this.clock.now();
    const apps = await this.db.transaction().execute(async (trx) => {
      const user = await trx.selectFrom("users").select(["id", "role"]).where("handle", "=", handle).executeTakeFirst();
      if (user === undefined) throw apiError("not_found", `no user with handle ${handle}`);
      if (audit.actor.kind === "user" && audit.actor.id === user.id) throw apiError("invalid_request", "an operator cannot suspend their own account");
      // The users row last: its trigger moves the token epoch (migration 026).
      await writeAudit(trx, now, audit, { action: "user.suspend", target: { kind: "user", id: user.id }, detail: { handle, reason: why } });
      await trx.updateTable("users").set({ suspended_at: now, suspended_reason: why }).where("id", "=", user.id).execute();
      return trx.selectFrom("apps").select("id").where("owner_user_id", "=", user.id).execute();
    });
    for (const app of apps) this.listener.suspended(app.id);
  }

  async unsuspendUser(handle: string, audit: AuditContext): Promise<void> {
    const now = this.clock.now();
    await this.db.transaction().execute(async (trx) => {
      const user = await trx.selectFrom("users").select("id").where("handle", "=", handle).executeTakeFirst();
      if (user === undefined) throw apiError("not_found", `no user with handle ${handle}`);
      await writeAudit(trx, now, audit, { action: "user.unsuspend", target: { kind: "user", id: user.id }, detail: { handle } });
      await trx.updateTable("users").set({ suspended_at: null, suspended_reason: null }).where("id", "=", user.id).execute();
    });
  }
}

function reasonOf(reason: unknown): string {
  const text = typeof reason === "string" ? reason.trim() : "";
  if (text === "" || [...text].length > REASON_MAX_CHARS) throw apiError("invalid_request", `reason must be 1 to ${REASON_MAX_CHARS} characters`);
  return text;
}
