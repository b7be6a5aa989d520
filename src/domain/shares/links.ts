import { randomUUID } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { isUniqueViolation, type Dialect } from "../../store/index.ts";
import { lockRow } from "../../store/row-lock.ts";
import type { Database } from "../../store/schema/index.ts";
import { hashToken, mintToken, parseToken } from "../tokens/format.ts";
import type { Actor } from "../access/access.ts";
import type { Apps } from "../apps/apps.ts";
import { widest } from "../access/access.ts";
import { heldRole } from "../access/roles.ts";
import { writeAudit, type AuditContext } from "../operators/audit.ts";

export const LINK_ROLES = ["viewer", "end-user"] as const;
export type LinkRole = (typeof LINK_ROLES)[number];

/** DECISIONS §9: live links per app. */
export const LINKS_PER_APP = 10;

export interface ShareLink {
  id: string;
  role: LinkRole;
  createdAt: number;
}

/**
 * Share links (DECISIONS §9): a revocable URL that gives its role to any signed-in person who
 * opens it. Only the owner makes, lists and revokes them. The token is stored as its hash, so
 * the URL is shown once, when the link is made. Grants made through a link are app_shares rows
 * that name the link, and go with it.
 */
export class ShareLinks {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly baseUrl: () => string,
  ) {}

  async create(appId: string, actor: Actor, role: LinkRole, audit: AuditContext): Promise<ShareLink & { url: string }> {
    const { app } = await this.apps.load(appId, actor, "manage");
    const owner = actor?.kind === "user" ? actor.userId : "";
    const token = mintToken("share");
    const link = { id: randomUUID(), role, createdAt: this.clock.now() };
    await this.db.transaction().execute(async (trx) => {
      // Two instances making links at once count one after the other.
      await lockRow(trx, this.dialect, "apps", app.id);
      const live = await trx.selectFrom("app_share_links").select((eb) => eb.fn.countAll<number>().as("n")).where("app_id", "=", app.id).executeTakeFirstOrThrow();
      if (Number(live.n) >= LINKS_PER_APP) throw apiError("link_cap_reached", `an app has at most ${LINKS_PER_APP} live share links; revoke one first`);
      await trx
        .insertInto("app_share_links")
        .values({ id: link.id, app_id: app.id, role, token_hash: token.hash, created_by: owner, created_at: link.createdAt })
        .execute();
      await writeAudit(trx, link.createdAt, audit, { action: "share_link.create", target: { kind: "share", id: link.id }, detail: { app: app.id, role } });
    });
    return { ...link, url: `${this.baseUrl()}/share/${token.plaintext}` };
  }

  async list(appId: string, actor: Actor): Promise<ShareLink[]> {
    const { app } = await this.apps.load(appId, actor, "manage");
    const rows = await this.db.selectFrom("app_share_links").select(["id", "role", "created_at"]).where("app_id", "=", app.id).orderBy("created_at", "desc").execute();
    return rows.map((r) => ({ id: r.id, role: r.role, createdAt: r.created_at }));
  }

  /** Removes the link and every grant made through it; true when there was one. */
  async revoke(appId: string, actor: Actor, linkId: string, audit: AuditContext): Promise<boolean> {
    const { app } = await this.apps.load(appId, actor, "manage");
    return this.db.transaction().execute(async (trx) => {
      const removed = await trx.deleteFrom("app_share_links").where("id", "=", linkId).where("app_id", "=", app.id).executeTakeFirst();
      if (removed.numDeletedRows === 0n) return false;
      const grants = await trx.deleteFrom("app_shares").where("link_id", "=", linkId).executeTakeFirst();
      await writeAudit(trx, this.clock.now(), audit, { action: "share_link.revoke", target: { kind: "share", id: linkId }, detail: { app: app.id, grants: Number(grants.numDeletedRows) } });
      return true;
    });
  }

  /** The app and role a link grants, without granting anything (the page shows it first). */
  async peek(token: string): Promise<{ appId: string; displayName: string; role: LinkRole }> {
    const link = await this.find(token);
    const app = await this.apps.find(link.app_id);
    return { appId: app.id, displayName: app.displayName, role: link.role };
  }

  private async find(token: string) {
    if (parseToken(token) !== "share") throw apiError("not_found", "this share link is not valid; ask the owner for a new one");
    const link = await this.db.selectFrom("app_share_links").selectAll().where("token_hash", "=", hashToken(token)).executeTakeFirst();
    if (link === undefined) throw linkGone();
    return link;
  }

  /**
   * A signed-in person opened a link: they hold its role on the app from now on, unless they
   * hold a wider one already (then nothing changes). Returns the app id and the role they have.
   * What they hold is what lasts: the end-user role a signed-in app gives everyone goes when it
   * turns private, so a link to that role is granted all the same.
   */
  async open(token: string, userId: string, audit: AuditContext): Promise<{ appId: string; role: string }> {
    const link = await this.find(token);
    const app = await this.apps.find(link.app_id);
    const current = await this.apps.roleOf({ kind: "user", userId }, app);
    const role = widest(current, link.role) ?? link.role;
    const held = await heldRole(this.db, app, userId);
    if (widest(held, link.role) !== link.role || held === link.role) return { appId: app.id, role };
    try {
      await this.db.transaction().execute(async (trx) => {
        await this.grant(trx, link, userId);
        await writeAudit(trx, this.clock.now(), audit, { action: "share_link.open", target: { kind: "share", id: link.id }, detail: { app: app.id, role: link.role } });
      });
    } catch (error) {
      // The same person opening two of the app's links at once: the other made their grant.
      if (!isUniqueViolation(error)) throw error;
      return { appId: app.id, role: (await this.apps.roleOf({ kind: "user", userId }, app)) ?? link.role };
    }
    return { appId: app.id, role };
  }

  private async grant(trx: Transaction<Database>, link: { id: string; app_id: string; role: LinkRole; created_by: string }, userId: string): Promise<void> {
    // Read again under its lock: a revoke that committed since the caller's lookup leaves no link
    // to grant through, and one that comes later waits for this grant, then removes it.
    if (!(await lockRow(trx, this.dialect, "app_share_links", link.id))) throw linkGone();
    const held = await trx.selectFrom("app_shares").select(["id", "role", "status"]).where("app_id", "=", link.app_id).where("grantee_user_id", "=", userId).executeTakeFirst();
    // An open invitation to a wider role is theirs to accept; the link would narrow it.
    if (held !== undefined && held.status !== "accepted" && widest(held.role, link.role) !== link.role) {
      throw apiError("already_invited", `you hold an invitation to this app as ${held.role}; accept it instead`);
    }
    // A narrower grant or invitation gives way to the link's grant.
    if (held !== undefined) await trx.deleteFrom("app_shares").where("id", "=", held.id).execute();
    const now = this.clock.now();
    await trx
      .insertInto("app_shares")
      .values({
        id: randomUUID(),
        app_id: link.app_id,
        grantee_user_id: userId,
        grantee_email: null,
        role: link.role,
        status: "accepted",
        invited_by: link.created_by,
        created_at: now,
        expires_at: now,
        accepted_at: now,
        link_id: link.id,
      })
      .execute();
  }
}

const linkGone = () => apiError("not_found", "this share link was revoked or never existed; ask the owner for a new one");
