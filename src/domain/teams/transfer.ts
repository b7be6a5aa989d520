import type { Kysely, Transaction } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError, recovery } from "../../errors/index.ts";
import { PLAN_LIMITS, planRefusal } from "../../config/plans.ts";
import type { Plan } from "../../errors/index.ts";
import { isUniqueViolation, type Database, type Dialect } from "../../store/index.ts";
import { lockOwnerRow } from "../../store/row-lock.ts";
import { capCounts } from "../capped-insert.ts";
import type { Users } from "../accounts/users.ts";
import type { Actor } from "../access/access.ts";
import type { Apps } from "../apps/apps.ts";
import type { AppRecord } from "../apps/queries.ts";
import type { Secrets } from "../secrets/secrets.ts";
import type { Teams } from "./teams.ts";
import { writeAudit, type AuditContext } from "../operators/audit.ts";

export interface TransferInput {
  /** A team's slug: the app moves into that team. */
  team?: string;
  /** A person's handle: the app moves out of its team to that member (or stays with its owner). */
  user?: string;
}

/**
 * `POST /api/v1/apps/{appId}/transfer` (DECISIONS §9). The caller needs the app's owner rights
 * (its owner, or an owner or admin of the team that owns it). Into a team: the caller must be an
 * owner or admin there too, since the team's admins take charge of it. Out of a team: only to a
 * member of that team. Handing a personal app to another person is not offered: share it, or
 * move it into a team you both belong to. Shares, routines, webhooks, data and assets stay with
 * the app; its secrets move with it (sealed again for the new owner).
 */
export class AppTransfer {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly teams: Teams,
    private readonly users: Users,
    private readonly secrets: Secrets,
    private readonly baseUrl: () => string,
  ) {}

  async transfer(appId: string, actor: Actor, input: TransferInput, audit?: AuditContext): Promise<{ app: AppRecord; moved: boolean }> {
    if ((input.team === undefined) === (input.user === undefined)) throw apiError("invalid_request", "send exactly one of team (a team's slug) or user (a handle)");
    const { app } = await this.apps.load(appId, actor, "manage");
    const actorId = actor?.kind === "user" ? actor.userId : null;
    if (actorId === null || app.ownerUserId === null) throw apiError("forbidden", "only a signed-in owner can transfer an app");
    const to = input.team !== undefined ? await this.teamDestination(input.team, actorId) : await this.personDestination(input.user ?? "", app.ownerUserId);
    if (to === app.ownerUserId) return { app, moved: false };
    const from = app.ownerUserId;
    const destination = await this.users.byId(to);
    try {
      await this.db.transaction().execute(async (trx) => {
        const moved = await trx
          .updateTable("apps")
          .set({ owner_user_id: to, updated_at: this.clock.now() })
          .where("id", "=", app.id)
          .where("owner_user_id", "=", from)
          .executeTakeFirst();
        if (moved.numUpdatedRows === 0n) throw apiError("forbidden", "this app changed owner a moment ago; load it again");
        await this.refuseOverCaps(trx, app.id, from, { id: to, plan: destination?.plan ?? "free", handle: destination?.handle ?? null });
        await this.secrets.moveScope(trx, { ownerUserId: from, manifestId: app.manifestId }, { ownerUserId: to, manifestId: app.manifestId });
        if (audit !== undefined) await writeAudit(trx, this.clock.now(), audit, { action: "app.transfer", target: { kind: "app", id: app.id }, detail: { from, to } });
      });
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const existing = await this.db.selectFrom("apps").select("id").where("owner_user_id", "=", to).where("manifest_id", "=", app.manifestId).executeTakeFirst();
      throw apiError("manifest_id_conflict", `the destination already has an app with manifest id ${app.manifestId}`, {
        ...(existing === undefined ? {} : { existingAppId: existing.id }),
        recovery: recovery.rename("delete the destination's app of that manifest id first, or copy this app under a new manifest id and transfer the copy"),
      });
    }
    return { app: await this.apps.mustFind(app.id), moved: true };
  }

  /**
   * Routines and webhooks count against the plan of the app's owner, and were counted only when
   * made: moving apps into a team (or out to a member) gathered more than its plan allows. Both
   * owners' rows are held (in one order, so two moves cannot wait on each other) so creates on
   * either side wait; the counts are taken with the app already moved.
   */
  private async refuseOverCaps(trx: Transaction<Database>, appId: string, from: string, to: { id: string; plan: Plan; handle: string | null }): Promise<void> {
    for (const owner of [from, to.id].sort()) await lockOwnerRow(trx, this.dialect, owner);
    const { plan, handle } = to;
    const limits = PLAN_LIMITS[plan];
    for (const [table, kind] of [
      ["routines", "routine_limit_exceeded"],
      ["webhooks", "webhook_limit_exceeded"],
    ] as const) {
      const counts = await capCounts(trx, table, appId, to.id);
      const perApp = `${table}_per_app` as const;
      const perOwner = `${table}_per_owner` as const;
      const over =
        counts.app > limits[perApp]
          ? { limit: perApp, max: limits[perApp], message: `this app has ${counts.app} ${table}; @${handle}'s ${plan} plan allows ${limits[perApp]} an app` }
          : counts.owner > limits[perOwner]
            ? { limit: perOwner, max: limits[perOwner], message: `with this app @${handle} would have ${counts.owner} ${table}; their ${plan} plan allows ${limits[perOwner]}` }
            : null;
      if (over !== null) throw planRefusal(kind, `${over.message}: delete some of the app's ${table} before moving it`, { plan, limit: over.limit, max: over.max, baseUrl: this.baseUrl(), handle });
    }
  }

  private async teamDestination(slug: string, actorId: string): Promise<string> {
    const team = await this.teams.bySlug(slug);
    if (team === null) throw apiError("not_found", `no team @${slug}`);
    await this.teams.requireAdmin(team.id, actorId);
    return team.id;
  }

  /** Out of a team, to one of its members; a personal app "to" its own owner is a no-op. */
  private async personDestination(handle: string, currentOwner: string): Promise<string> {
    const person = await this.users.byHandle(handle.replace(/^@/, "").toLowerCase());
    if (person === null || person.kind !== "person") throw apiError("not_found", `no person @${handle}`);
    if (person.id === currentOwner) return person.id;
    const owner = await this.users.byId(currentOwner);
    if (owner?.kind !== "team") throw apiError("forbidden", "an app moves to another person only out of a team; share it or move it into a team you both belong to");
    if ((await this.teams.roleIn(currentOwner, person.id)) === null) throw apiError("forbidden", `@${person.handle} is not a member of the team that owns this app`);
    return person.id;
  }
}
