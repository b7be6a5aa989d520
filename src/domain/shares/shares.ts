import { acceptedShareRole } from "../access/roles.ts";
import { randomUUID } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import { DAY, type Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { isUniqueViolation, type Dialect } from "../../store/index.ts";
import { lockRow } from "../../store/row-lock.ts";
import type { Database } from "../../store/schema/index.ts";
import type { Users } from "../accounts/users.ts";
import type { Apps } from "../apps/apps.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { Actor, AppRole } from "../access/access.ts";
import { writeAudit, type AuditContext } from "../operators/audit.ts";

export const SHARE_ROLES = ["collaborator", "end-user", "viewer"] as const;
export type ShareRole = (typeof SHARE_ROLES)[number];

/** DECISIONS §9: invitations live 14 days; an owner sends at most 50 a day. */
export const INVITATION_TTL_MS = 14 * DAY;
export const INVITES_PER_DAY = 50;

// Shapes, not proof: a handle as accounts are made with, an address with no spaces or controls.
const HANDLE = /^[a-z0-9][a-z0-9-]{1,38}$/;
const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+\.[^\s@\p{Cc}]+$/u;

export interface ShareView {
  shareId: string;
  grantee: string;
  role: ShareRole;
  status: "pending" | "invited" | "accepted" | "expired";
  createdAt: number;
  expiresAt: number | null;
}

export interface IncomingShare {
  shareId: string;
  appId: string;
  role: ShareRole;
  invitedBy: string;
  createdAt: number;
  expiresAt: number;
}

/** What a revoke answers: the spec's webhook rule 6 said where the caller will read it. */
export const REVOKE_NOTE = "webhooks this person created stay as they are; rotate their secret or delete them to cut a sender off";

/**
 * Apps shared with people (spec: Share invitation; DECISIONS §9). Only the owner shares (the
 * `manage` permission, which no shared role holds). No access before accept. An invitation by
 * email goes to an account only once that account has verified the address (verification.ts):
 * before that it stays `invited`, whoever signs up with the address.
 */
export class Shares {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly users: Users,
    private readonly mailer: Mailer,
    private readonly baseUrl: () => string,
  ) {}

  async invite(appId: string, actor: Actor, input: { grantee: string; role?: ShareRole }, audit?: AuditContext): Promise<{ status: "pending" | "invited"; shareId: string }> {
    const { app } = await this.apps.load(appId, actor, "manage");
    const inviter = actor?.kind === "user" ? actor.userId : null;
    if (inviter === null) throw apiError("forbidden", "only a signed-in owner can share an app");
    const role = input.role ?? "collaborator";
    const grantee = input.grantee.trim();
    const byEmail = grantee.includes("@");
    if (byEmail && !EMAIL.test(grantee)) throw apiError("invalid_request", "grantee must be an account's handle or an email address");
    const handle = grantee.replace(/^@/, "").toLowerCase();
    // A string no handle can be is nobody, and never reaches a query (PostgreSQL refuses NUL).
    const user = byEmail ? await this.verifiedAccount(grantee) : HANDLE.test(handle) ? await this.users.byHandle(handle) : null;
    if (!byEmail && user === null) throw apiError("grantee_not_found", `no account has the handle ${grantee}`);
    if (user?.kind === "team") throw apiError("grantee_not_found", `@${user.handle} is a team, not a person; share with its members, or transfer the app into it`);
    if (user?.id === inviter) throw apiError("grantee_is_self", "you already have this app");
    if (user !== null && user.id === app.ownerUserId) throw apiError("grantee_is_owner", "that account owns this app");
    // Members of the team that owns the app reach it already; a share would only narrow or repeat that.
    const held = user === null ? null : await this.apps.roleOf({ kind: "user", userId: user.id }, app);
    if (held === "team-admin" || held === "team-member") throw apiError("grantee_already_has_access", "that person is a member of the team that owns this app");
    const email = byEmail && user === null ? grantee.toLowerCase() : null;

    const now = this.clock.now();
    const result = await this.invitation(async (trx) => {
      // One inviter's invitations one at a time, on every instance: the daily cap holds.
      await lockRow(trx, this.dialect, "users", inviter);
      const existing = await trx
        .selectFrom("app_shares")
        .selectAll()
        .where("app_id", "=", app.id)
        .where(user === null ? "grantee_email" : "grantee_user_id", "=", user?.id ?? email)
        .executeTakeFirst();
      if (existing?.status === "accepted") throw apiError("grantee_already_has_access", "that person already has access to this app");
      if (existing !== undefined && existing.expires_at > now) throw apiError("already_invited", "that person has an invitation already; revoke it to send another");
      // Counted from what was sent, not from the shares: a revoke deletes its share, and a share
      // link's grants name the link's maker as their inviter.
      await trx.deleteFrom("share_invitations_sent").where("inviter_user_id", "=", inviter).where("created_at", "<=", now - DAY).execute();
      const sentToday = await trx
        .selectFrom("share_invitations_sent")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("inviter_user_id", "=", inviter)
        .executeTakeFirstOrThrow();
      if (Number(sentToday.n) >= INVITES_PER_DAY) throw apiError("invite_cap_reached", `you have sent ${INVITES_PER_DAY} invitations in the last 24 hours; try again later`);
      await trx.insertInto("share_invitations_sent").values({ inviter_user_id: inviter, created_at: now }).execute();
      // An expired invitation is replaced: its row goes, the new one takes a new id.
      if (existing !== undefined) await trx.deleteFrom("app_shares").where("id", "=", existing.id).execute();
      const shareId = randomUUID();
      const status: "pending" | "invited" = user === null ? "invited" : "pending";
      await trx
        .insertInto("app_shares")
        .values({
          id: shareId,
          app_id: app.id,
          grantee_user_id: user?.id ?? null,
          grantee_email: email,
          role,
          status,
          invited_by: inviter,
          created_at: now,
          expires_at: now + INVITATION_TTL_MS,
          accepted_at: null,
          link_id: null,
        })
        .execute();
      if (audit !== undefined) await writeAudit(trx, now, audit, { action: "share.invite", target: { kind: "share", id: shareId }, detail: { app: app.id, grantee: user?.handle ?? email, role } });
      return { status, shareId };
    });
    await this.mailInvitation(inviter, app.displayName, app.id, user?.email ?? email ?? "", role, result.status);
    return result;
  }

  /** Runs an invitation's transaction; another inviter inviting the same person at once made theirs. */
  private async invitation<T>(write: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction().execute(write);
    } catch (error) {
      if (isUniqueViolation(error)) throw apiError("already_invited", "that person was invited a moment ago; revoke that invitation to send another");
      throw error;
    }
  }

  /** Tells the invitee, at their account's address or the address invited. */
  private async mailInvitation(inviterId: string, displayName: string, appId: string, to: string, role: ShareRole, status: "pending" | "invited"): Promise<void> {
    const inviter = await this.users.byId(inviterId);
    const base = this.baseUrl();
    const open = `${base}/invitations/${appId}`;
    const steps =
      status === "pending"
        ? `Open ${open} to accept. The invitation lasts 14 days.`
        : `Sign up at ${base} with this address and confirm it from the mail you receive; then open ${open} to accept. The invitation lasts 14 days.`;
    await this.mailer.send({
      to,
      subject: `@${inviter?.handle ?? "someone"} shared "${displayName}" with you on Brickyard`,
      text: `@${inviter?.handle ?? "someone"} invited you to use "${displayName}" as ${role}.\n\n${steps}\n`,
    });
  }

  /** The account an email invitation may go to: only one that proved it receives mail there. */
  private async verifiedAccount(email: string) {
    const user = await this.users.byEmail(email);
    return user?.emailVerified === true ? user : null;
  }

  /**
   * An account just verified `email`: invitations sent to that address become its pending
   * invitations, except for apps it owns or already has a share of.
   */
  async takeInvitations(userId: string, email: string, db: Kysely<Database> = this.db): Promise<number> {
    const now = this.clock.now();
    const invited = await db
      .selectFrom("app_shares")
      .innerJoin("apps", "apps.id", "app_shares.app_id")
      .select(["app_shares.id", "app_shares.app_id", "apps.owner_user_id"])
      .where("app_shares.grantee_email", "=", email)
      .where("app_shares.status", "=", "invited")
      .where("app_shares.expires_at", ">", now)
      .execute();
    let taken = 0;
    for (const row of invited) {
      if (row.owner_user_id === userId) continue;
      const held = await db.selectFrom("app_shares").select("id").where("app_id", "=", row.app_id).where("grantee_user_id", "=", userId).executeTakeFirst();
      if (held !== undefined) continue;
      await db.updateTable("app_shares").set({ grantee_user_id: userId, grantee_email: null, status: "pending" }).where("id", "=", row.id).execute();
      taken += 1;
    }
    return taken;
  }

  /** The caller takes the invitation addressed to them; a repeat answers `alreadyAccepted`. */
  async accept(appId: string, userId: string, audit?: AuditContext): Promise<{ alreadyAccepted: boolean }> {
    const app = await this.apps.find(appId);
    const share = await this.db.selectFrom("app_shares").selectAll().where("app_id", "=", app.id).where("grantee_user_id", "=", userId).executeTakeFirst();
    if (share?.status === "accepted") return { alreadyAccepted: true };
    if (share === undefined || share.expires_at <= this.clock.now()) throw apiError("forbidden", "you hold no open invitation to this app");
    const now = this.clock.now();
    await this.db.transaction().execute(async (trx) => {
      const taken = await trx.updateTable("app_shares").set({ status: "accepted", accepted_at: now }).where("id", "=", share.id).where("status", "=", "pending").executeTakeFirst();
      if (taken.numUpdatedRows > 0n && audit !== undefined) await writeAudit(trx, now, audit, { action: "share.accept", target: { kind: "share", id: share.id }, detail: { app: app.id, role: share.role } });
    });
    return { alreadyAccepted: false };
  }

  /** Removes the grant or invitation `shareId` of this app; true when there was one. */
  async revoke(appId: string, actor: Actor, shareId: string, audit?: AuditContext): Promise<boolean> {
    const { app } = await this.apps.load(appId, actor, "manage");
    return this.db.transaction().execute(async (trx) => {
      const result = await trx.deleteFrom("app_shares").where("id", "=", shareId).where("app_id", "=", app.id).executeTakeFirst();
      const gone = result.numDeletedRows > 0n;
      if (gone && audit !== undefined) await writeAudit(trx, this.clock.now(), audit, { action: "share.revoke", target: { kind: "share", id: shareId }, detail: { app: app.id } });
      return gone;
    });
  }

  async list(appId: string, actor: Actor): Promise<ShareView[]> {
    const { app } = await this.apps.load(appId, actor, "manage");
    const rows = await this.db
      .selectFrom("app_shares")
      .leftJoin("users", "users.id", "app_shares.grantee_user_id")
      .select(["app_shares.id", "app_shares.grantee_email", "users.handle", "app_shares.role", "app_shares.status", "app_shares.created_at", "app_shares.expires_at"])
      .where("app_shares.app_id", "=", app.id)
      .orderBy("app_shares.created_at", "desc")
      .execute();
    const now = this.clock.now();
    return rows.map((r) => ({
      shareId: r.id,
      grantee: r.handle ?? r.grantee_email ?? "",
      role: r.role,
      status: r.status !== "accepted" && r.expires_at <= now ? "expired" : r.status,
      createdAt: r.created_at,
      expiresAt: r.status === "accepted" ? null : r.expires_at,
    }));
  }

  /** Open invitations addressed to this account. */
  async incoming(userId: string): Promise<IncomingShare[]> {
    const rows = await this.db
      .selectFrom("app_shares")
      .innerJoin("users", "users.id", "app_shares.invited_by")
      .select(["app_shares.id", "app_shares.app_id", "app_shares.role", "users.handle", "app_shares.created_at", "app_shares.expires_at"])
      .where("app_shares.grantee_user_id", "=", userId)
      .where("app_shares.status", "=", "pending")
      .where("app_shares.expires_at", ">", this.clock.now())
      .orderBy("app_shares.created_at", "desc")
      .execute();
    return rows.map((r) => ({ shareId: r.id, appId: r.app_id, role: r.role, invitedBy: r.handle, createdAt: r.created_at, expiresAt: r.expires_at }));
  }

  /** The role an accepted share gives this user on this app, or null (Apps.roleOf asks). */
  roleOf(appId: string, userId: string): Promise<AppRole | null> {
    return this.accepted(appId, userId);
  }

  accepted(appId: string, userId: string): Promise<ShareRole | null> {
    return acceptedShareRole(this.db, appId, userId);
  }
}
