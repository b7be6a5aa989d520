import type { AccessSubject, Actor, AppRole } from "../access/access.ts";
import { apiError } from "../../errors/index.ts";
import type { Role } from "../../runtime/index.ts";

/**
 * Who may call an app's operations and in which role (DECISIONS §4; spec Authentication rule 1:
 * the app token or other tokens bound to the app). `related` is the role `Apps.roleOf` found
 * through another relation (a share or a team membership), which counts as itself; the other
 * roles come from the token.
 */
export function operationCaller(actor: Actor, app: AccessSubject, related: AppRole | null = null): { role: Role; userId: string | null } {
  const share = RELATIONS.has(related as Relation) ? (related as Relation) : null;
  if (actor === null) throw apiError("unauthorized", "send the app's token, a render token for it, or a user token as 'Authorization: Bearer …'");
  switch (actor.kind) {
    case "app":
      if (actor.appId !== app.id) throw apiError("forbidden", "this app token belongs to another app");
      return { role: "app", userId: null };
    case "render":
      if (actor.appId !== app.id) throw apiError("forbidden", "this render token belongs to another app");
      if (actor.userId !== null && actor.userId === app.ownerUserId) return { role: "owner", userId: actor.userId };
      // Someone else who loaded the page: their share, or an end-user while the app stays open
      // to signed-in users, else an anonymous visitor (unclaimed and public apps).
      if (actor.userId !== null && share !== null) return { role: widerThanOpen(share, app), userId: actor.userId };
      if (actor.userId !== null && app.ownerUserId !== null && app.visibility !== "private") return { role: "end-user", userId: actor.userId };
      if (app.ownerUserId === null || app.visibility === "public") return { role: "visitor", userId: actor.userId };
      // The person who loaded the page lost access since (a share revoked, a team left, the app
      // made private): the token they still hold is worth nothing here.
      throw apiError("forbidden", "this page's access to the app has ended; reload it");
    case "user":
      if (actor.userId === app.ownerUserId) return { role: "owner", userId: actor.userId };
      if (share !== null) return { role: widerThanOpen(share, app), userId: actor.userId };
      if (app.ownerUserId !== null && app.visibility !== "private") return { role: "end-user", userId: actor.userId };
      // Someone else's app (spec Authentication rule 4: the token does not authorize it).
      if (app.ownerUserId !== null) throw apiError("forbidden", "this app is not shared with you");
      throw apiError("forbidden", "only this app's own token can call an unclaimed app's operations");
  }
}

type Relation = "collaborator" | "end-user" | "viewer" | "team-admin" | "team-member";
const RELATIONS = new Set<Relation>(["collaborator", "end-user", "viewer", "team-admin", "team-member"]);

/** A viewer's share does not narrow what the app's visibility already lets any signed-in user do. */
function widerThanOpen(share: Relation, app: AccessSubject): Role {
  return share === "viewer" && app.ownerUserId !== null && app.visibility !== "private" ? "end-user" : share;
}
