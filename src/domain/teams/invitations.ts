import { randomUUID } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import { DAY, type Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { UUID } from "../ids.ts";
import { isUniqueViolation, type Database, type Dialect } from "../../store/index.ts";
import { lockRow } from "../../store/row-lock.ts";
import type { TeamInvitationsTable } from "../../store/schema/teams.ts";
import type { Users } from "../accounts/users.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { Teams } from "./teams.ts";

/** Invitations live 14 days like share invitations; a team sends at most 50 a day (DECISIONS §9). */
export const TEAM_INVITATION_TTL_MS = 14 * DAY;
export const TEAM_INVITES_PER_DAY = 50;

const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+\.[^\s@\p{Cc}]+$/u;

export type InvitedRole = TeamInvitationsTable["role"];

export interface TeamInvitationView {
  id: string;
  teamId: string;
  email: string;
  role: InvitedRole;
  status: "pending" | "accepted" | "expired";
  createdAt: number;
  expiresAt: number;
}

type Row = TeamInvitationsTable;

/**
 * Team invitations by email (spec: `/api/v1/team-invitations/…`). An invitation is accepted only
 * from a browser session (the route's job) by the account that verified the invited address: a
 * token that leaked, or someone who signed up with a copy of the address, gets 403. Re-sending
 * retires the pending row and issues a new one, so each address has one live invitation.
 */
export class TeamInvitations {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly teams: Teams,
    private readonly users: Users,
    private readonly mailer: Mailer,
    private readonly baseUrl: () => string,
  ) {}

  async invite(teamId: string, actorId: string, input: { email: string; role?: InvitedRole }): Promise<TeamInvitationView> {
    const { team } = await this.teams.requireAdmin(teamId, actorId);
    const email = input.email.trim().toLowerCase();
    if (!EMAIL.test(email)) throw apiError("invalid_request", "email is not an address");
    const role = input.role ?? "member";
    const person = await this.users.byEmail(email);
    if (person?.emailVerified === true && (await this.teams.roleIn(team.id, person.id)) !== null) {
      throw apiError("already_member", "the account at that address is a member of this team already");
    }
    const now = this.clock.now();
    const row = await this.db.transaction().execute(async (trx) => {
      // A team's invitations one at a time, on every instance: the daily cap holds.
      await lockRow(trx, this.dialect, "teams", team.id);
      const open = await pendingFor(trx, team.id, email);
      if (open !== undefined && open.expires_at > now) {
        throw apiError("already_invited", "that address has a pending invitation; re-send it to refresh its expiry", {
          details: { invitationId: open.id },
        });
      }
      await refuseOverDailyCap(trx, team.id, now);
      if (open !== undefined) await retire(trx, open.id);
      return this.insert(trx, { teamId: team.id, email, role, invitedBy: actorId, now });
    });
    await this.mail(row, team.name, team.slug);
    return view(row, now);
  }

  /** POST /api/v1/team-invitations/{id}/resend: a fresh invitation, the old one retired. */
  async resend(invitationId: string, actorId: string): Promise<TeamInvitationView> {
    const old = await this.find(invitationId);
    const { team } = await this.teams.requireAdmin(old.team_id, actorId);
    if (old.status === "accepted") throw apiError("already_member", "this invitation was accepted; its recipient is a member");
    if (old.status !== "pending") throw apiError("not_found", "this invitation was replaced or revoked; re-send the newest one for that address");
    const now = this.clock.now();
    const row = await this.db.transaction().execute(async (trx) => {
      // A re-send mails the address again: it counts, and is capped, as an invitation does.
      await lockRow(trx, this.dialect, "teams", old.team_id);
      await refuseOverDailyCap(trx, old.team_id, now);
      // Compare-and-set: of two concurrent re-sends, one retires the row and the other finds it gone.
      const retired = await retire(trx, old.id);
      if (!retired) throw apiError("not_found", "this invitation was replaced a moment ago; re-send the newest one");
      return this.insert(trx, { teamId: old.team_id, email: old.email, role: old.role, invitedBy: actorId, now });
    });
    await this.mail(row, team.name, team.slug);
    return view(row, now);
  }

  /** Withdraws a pending invitation; idempotent. */
  async revoke(invitationId: string, actorId: string): Promise<{ revoked: boolean }> {
    const row = await this.find(invitationId);
    await this.teams.requireAdmin(row.team_id, actorId);
    const result = await this.db.updateTable("team_invitations").set({ status: "revoked" }).where("id", "=", row.id).where("status", "=", "pending").executeTakeFirst();
    return { revoked: result.numUpdatedRows > 0n };
  }

  /** The pending invitations of a team, newest first (owners and admins). */
  async list(teamId: string, actorId: string): Promise<TeamInvitationView[]> {
    const { team } = await this.teams.requireAdmin(teamId, actorId);
    const rows = await this.db.selectFrom("team_invitations").selectAll().where("team_id", "=", team.id).where("status", "=", "pending").orderBy("created_at", "desc").execute();
    const now = this.clock.now();
    return rows.map((r) => view(r, now));
  }

  /** Open invitations to the caller's verified address (for the account's pages). */
  async incoming(userId: string): Promise<(TeamInvitationView & { teamSlug: string; teamName: string })[]> {
    const user = await this.users.byId(userId);
    if (user?.emailVerified !== true) return [];
    const rows = await this.db
      .selectFrom("team_invitations")
      .innerJoin("teams", "teams.id", "team_invitations.team_id")
      .innerJoin("users", "users.id", "teams.id")
      .selectAll("team_invitations")
      .select(["teams.name as team_name", "users.handle as team_slug"])
      .where("team_invitations.email", "=", user.email)
      .where("team_invitations.status", "=", "pending")
      .where("team_invitations.expires_at", ">", this.clock.now())
      .orderBy("team_invitations.created_at", "desc")
      .execute();
    const now = this.clock.now();
    return rows.map((r) => ({ ...view(r, now), teamSlug: r.team_slug, teamName: r.team_name }));
  }

  /**
   * The caller joins the team. 403 unless the caller's verified address is the invited one and
   * the invitation is still pending and unexpired; a repeat by the member it made answers ok.
   */
  async accept(invitationId: string, userId: string): Promise<{ teamId: string; alreadyMember: boolean }> {
    const row = await this.find(invitationId);
    // A repeat answers ok only while the member it made still is one: a removal ends it.
    if (row.status === "accepted" && row.accepted_by === userId) {
      if ((await this.teams.roleIn(row.team_id, userId)) === null) throw apiError("forbidden", "this invitation is no longer valid: you were removed from the team since; ask it for a new one");
      return { teamId: row.team_id, alreadyMember: true };
    }
    const user = await this.users.byId(userId);
    if (user === null || user.email !== row.email) throw apiError("forbidden", "this invitation was sent to another address");
    if (!user.emailVerified) throw apiError("forbidden", "confirm your email address first (see the mail we sent you, or resend it from your account)");
    if (row.status !== "pending") throw apiError("forbidden", "this invitation is no longer valid; ask the team for a new one");
    const now = this.clock.now();
    if (row.expires_at <= now) throw apiError("forbidden", "this invitation has expired; ask the team to re-send it");
    const alreadyMember = await this.db.transaction().execute(async (trx) => {
      const taken = await trx
        .updateTable("team_invitations")
        .set({ status: "accepted", accepted_by: userId, accepted_at: now })
        .where("id", "=", row.id)
        .where("status", "=", "pending")
        .executeTakeFirst();
      if (taken.numUpdatedRows === 0n) throw apiError("forbidden", "this invitation is no longer valid; ask the team for a new one");
      const member = await trx.selectFrom("team_members").select("role").where("team_id", "=", row.team_id).where("user_id", "=", userId).executeTakeFirst();
      if (member !== undefined) return true;
      await trx.insertInto("team_members").values({ team_id: row.team_id, user_id: userId, role: row.role, created_at: now }).execute();
      return false;
    });
    return { teamId: row.team_id, alreadyMember };
  }

  /** An invitation by id: 400 malformed, 404 unknown. */
  async find(invitationId: string): Promise<Row> {
    if (!UUID.test(invitationId)) throw apiError("invalid_id", `${invitationId} is not an invitation id (a UUID)`);
    const row = await this.db.selectFrom("team_invitations").selectAll().where("id", "=", invitationId).executeTakeFirst();
    if (row === undefined) throw apiError("not_found", `no team invitation ${invitationId}`);
    return row;
  }

  private async insert(trx: Transaction<Database>, o: { teamId: string; email: string; role: InvitedRole; invitedBy: string; now: number }): Promise<Row> {
    const row: Row = {
      id: randomUUID(),
      team_id: o.teamId,
      email: o.email,
      role: o.role,
      status: "pending",
      invited_by: o.invitedBy,
      created_at: o.now,
      expires_at: o.now + TEAM_INVITATION_TTL_MS,
      accepted_by: null,
      accepted_at: null,
    };
    try {
      await trx.insertInto("team_invitations").values(row).execute();
    } catch (error) {
      // The partial unique index: another request invited this address in the meantime.
      if (isUniqueViolation(error)) throw apiError("already_invited", "that address has a pending invitation; re-send it to refresh its expiry");
      throw error;
    }
    return row;
  }

  private async mail(row: Row, teamName: string, slug: string): Promise<void> {
    const link = `${this.baseUrl()}/team-invitations/${row.id}`;
    await this.mailer.send({
      to: row.email,
      subject: `You are invited to join the team "${teamName}" (@${slug}) on Brickyard`,
      text:
        `You are invited to join "${teamName}" as ${row.role}.\n\n` +
        `Open ${link} in your browser, signed in to the account with this address (confirmed), and accept. ` +
        `The invitation lasts 14 days.\n`,
    });
  }
}

function pendingFor(db: Kysely<Database>, teamId: string, email: string): Promise<Row | undefined> {
  return db.selectFrom("team_invitations").selectAll().where("team_id", "=", teamId).where("email", "=", email).where("status", "=", "pending").executeTakeFirst();
}

async function retire(db: Kysely<Database>, id: string): Promise<boolean> {
  const result = await db.updateTable("team_invitations").set({ status: "superseded" }).where("id", "=", id).where("status", "=", "pending").executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

function view(row: Row, now: number): TeamInvitationView {
  const status = row.status === "accepted" ? "accepted" : row.expires_at <= now ? "expired" : "pending";
  return { id: row.id, teamId: row.team_id, email: row.email, role: row.role, status, createdAt: Number(row.created_at), expiresAt: Number(row.expires_at) };
}

/** 429 once the team has sent TEAM_INVITES_PER_DAY invitations (re-sends included) in the last day; under the team's row lock. */
async function refuseOverDailyCap(trx: Kysely<Database>, teamId: string, now: number): Promise<void> {
  const sent = await trx
    .selectFrom("team_invitations")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("team_id", "=", teamId)
    .where("created_at", ">", now - DAY)
    .executeTakeFirstOrThrow();
  if (Number(sent.n) >= TEAM_INVITES_PER_DAY) throw apiError("invite_cap_reached", `this team sent ${TEAM_INVITES_PER_DAY} invitations in the last 24 hours; try again later`);
}
