import { teamRole } from "../access/roles.ts";
import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError, type Plan } from "../../errors/index.ts";
import { UUID } from "../ids.ts";
import { isUniqueViolation, type Database } from "../../store/index.ts";
import type { TeamRole } from "../../store/schema/teams.ts";
import { HANDLE_PATTERN, type Users } from "../accounts/users.ts";
import type { AppRole } from "../access/access.ts";
import type { AppRecord } from "../apps/queries.ts";
import { billingUrl, PLAN_LIMITS } from "../../config/plans.ts";

export type { TeamRole };

export interface TeamView {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  /** The caller's role in the team. */
  role: TeamRole;
  createdAt: number;
}

export interface MemberView {
  userId: string;
  handle: string;
  role: TeamRole;
  joinedAt: number;
}

/**
 * What removing a member answers: spec webhook rule 6, said where the caller will read it. Share
 * links an admin made stay too, as webhooks do: a link is the app's, and revoking it would also
 * end the access of everyone who opened it; but its URL was shown to them, so it is named here.
 */
export const MEMBER_REMOVED_NOTE =
  "webhooks and share links this person created on team apps stay as they are; rotate a webhook's secret or delete it, and revoke their links, to cut them off";

const NAME_MAX = 100;

/**
 * Teams (spec "What the service does" 7; DECISIONS §9). A team is an account of kind `team`
 * (migration 011): it owns team apps the way a person owns theirs, so a team app's URL is
 * `/@slug/manifestId`, its secrets, caps and upgrade link are the team's, and none of that needs
 * a second code path. People reach team apps through membership: the team's owners and admins
 * as `team-admin` (the owner's rights), members as `team-member` (edit and run).
 */
export class Teams {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly users: Users,
    private readonly baseUrl: () => string,
  ) {}

  /** POST /api/v1/teams: paid plans only; the slug shares the handles' namespace. */
  async create(userId: string, input: { slug: string; name?: string }): Promise<TeamView> {
    const creator = await this.users.byId(userId);
    if (creator === null) throw apiError("sign_in_required", "sign in to create a team");
    if (!PLAN_LIMITS[creator.plan].teams) {
      const upgradeUrl = billingUrl(this.baseUrl(), creator.handle);
      throw apiError("plan_required", `teams need the pro plan or above; you are on ${creator.plan}`, {
        plan: creator.plan,
        feature: "teams",
        ...(upgradeUrl === undefined ? {} : { upgradeUrl }),
      });
    }
    const slug = input.slug.trim().toLowerCase();
    if (!HANDLE_PATTERN.test(slug)) throw apiError("invalid_handle", "slug must match ^[a-z0-9][a-z0-9-]{1,38}$ (it becomes /@slug in app URLs)");
    const name = (input.name ?? slug).trim();
    if (name.length === 0 || name.length > NAME_MAX) throw apiError("invalid_request", `name must be 1 to ${NAME_MAX} characters`);
    const id = randomUUID();
    const now = this.clock.now();
    try {
      await this.db.transaction().execute(async (trx) => {
        await trx
          .insertInto("users")
          .values({
            id,
            // `.invalid` is reserved (RFC 2606): no one receives mail there, so no one verifies it.
            email: `team-${id}@teams.invalid`,
            handle: slug,
            // No argon2 hash has this form, and sign-in looks only at people besides.
            password_hash: "!team",
            plan: creator.plan,
            created_at: now,
            email_verified_at: null,
            kind: "team",
          })
          .execute();
        await trx.insertInto("teams").values({ id, name, created_by: userId, created_at: now }).execute();
        await trx.insertInto("team_members").values({ team_id: id, user_id: userId, role: "owner", created_at: now }).execute();
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw apiError("team_slug_taken", `@${slug} is taken by an account or a team`);
      throw error;
    }
    return { id, slug, name, plan: creator.plan, role: "owner", createdAt: now };
  }

  /** The teams the user belongs to, oldest membership first. */
  async mine(userId: string): Promise<TeamView[]> {
    const rows = await this.teamRows()
      .innerJoin("team_members", "team_members.team_id", "teams.id")
      .select(["team_members.role"])
      .where("team_members.user_id", "=", userId)
      .orderBy("team_members.created_at")
      .execute();
    return rows.map((r) => toView(r, r.role));
  }

  /** One team as its member sees it, with its members; 404 for an unknown id, 403 for a non-member. */
  async view(teamId: string, userId: string): Promise<{ team: TeamView; members: MemberView[] }> {
    const { team } = await this.requireMember(teamId, userId);
    const members = await this.db
      .selectFrom("team_members")
      .innerJoin("users", "users.id", "team_members.user_id")
      .select(["team_members.user_id", "users.handle", "team_members.role", "team_members.created_at"])
      .where("team_members.team_id", "=", team.id)
      .orderBy("team_members.created_at")
      .execute();
    return { team, members: members.map((m) => ({ userId: m.user_id, handle: m.handle, role: m.role, joinedAt: Number(m.created_at) })) };
  }

  /** The team and the caller's role in it: 400 malformed id, 404 no such team, 403 not a member. */
  async requireMember(teamId: string, userId: string): Promise<{ team: TeamView }> {
    const row = await this.find(teamId);
    const role = await this.roleIn(row.id, userId);
    if (role === null) throw apiError("forbidden", "you are not a member of this team");
    return { team: toView(row, role) };
  }

  /** As `requireMember`, and the caller must be one of the team's owners or admins. */
  async requireAdmin(teamId: string, userId: string): Promise<{ team: TeamView }> {
    const found = await this.requireMember(teamId, userId);
    if (found.team.role === "member") throw apiError("forbidden", "only the team's owners and admins may do this");
    return found;
  }

  roleIn(teamId: string, userId: string): Promise<TeamRole | null> {
    return teamRole(this.db, teamId, userId);
  }

  /** The team's apps, newest first (for the page a new member lands on). No access check. */
  async apps(teamId: string): Promise<{ id: string; manifestId: string; displayName: string; ownerHandle: string }[]> {
    const rows = await this.db
      .selectFrom("apps")
      .innerJoin("users", "users.id", "apps.owner_user_id")
      .select(["apps.id", "apps.manifest_id", "apps.display_name", "users.handle"])
      .where("apps.owner_user_id", "=", teamId)
      .orderBy("apps.created_at", "desc")
      .limit(100)
      .execute();
    return rows.map((r) => ({ id: r.id, manifestId: r.manifest_id, displayName: r.display_name, ownerHandle: r.handle }));
  }

  /** The team with this slug, or null (a person's handle is not a team). */
  async bySlug(slug: string): Promise<{ id: string; slug: string } | null> {
    const row = await this.teamRows().where("users.handle", "=", slug.trim().toLowerCase()).executeTakeFirst();
    return row === undefined ? null : { id: row.id, slug: row.handle };
  }

  /** Apps.roleOf asks: the role a team app gives a member of its team. */
  async roleOnApp(app: AppRecord, userId: string): Promise<AppRole | null> {
    if (app.ownerUserId === null) return null;
    const role = await this.roleIn(app.ownerUserId, userId);
    if (role === null) return null;
    return role === "member" ? "team-member" : "team-admin";
  }

  /**
   * Removes a member: an owner or admin removes others, anyone may leave; admins cannot remove
   * owners, and the last owner stays (a team with no owner could never be managed again).
   */
  async removeMember(teamId: string, actorId: string, memberId: string): Promise<{ removed: boolean }> {
    const { team } = await this.requireMember(teamId, actorId);
    if (memberId !== actorId && team.role === "member") throw apiError("forbidden", "only the team's owners and admins may remove members");
    return this.db.transaction().execute(async (trx) => {
      const target = await trx.selectFrom("team_members").select("role").where("team_id", "=", team.id).where("user_id", "=", memberId).executeTakeFirst();
      if (target === undefined) return { removed: false };
      if (target.role === "owner" && team.role !== "owner") throw apiError("forbidden", "only an owner may remove another owner");
      if (target.role === "owner") {
        const owners = await trx
          .selectFrom("team_members")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("team_id", "=", team.id)
          .where("role", "=", "owner")
          .executeTakeFirstOrThrow();
        if (Number(owners.n) <= 1) throw apiError("forbidden", "a team keeps at least one owner; make someone else an owner first");
      }
      await trx.deleteFrom("team_members").where("team_id", "=", team.id).where("user_id", "=", memberId).execute();
      return { removed: true };
    });
  }

  /** The team row by id: 400 for a malformed id, 404 for none. */
  async find(teamId: string) {
    if (!UUID.test(teamId)) throw apiError("invalid_id", `${teamId} is not a team id (a UUID)`);
    const row = await this.teamRows().where("teams.id", "=", teamId).executeTakeFirst();
    if (row === undefined) throw apiError("not_found", `no team ${teamId}`);
    return row;
  }

  private teamRows() {
    return this.db
      .selectFrom("teams")
      .innerJoin("users", "users.id", "teams.id")
      .select(["teams.id", "teams.name", "teams.created_at", "users.handle", "users.plan"]);
  }
}


function toView(row: { id: string; name: string; created_at: number; handle: string; plan: string }, role: TeamRole): TeamView {
  return { id: row.id, slug: row.handle, name: row.name, plan: row.plan as Plan, role, createdAt: Number(row.created_at) };
}
