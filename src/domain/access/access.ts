import { apiError } from "../../errors/index.ts";

/**
 * Who is asking, as domain code sees it. The HTTP layer's principal (http/auth.ts) fits this
 * shape; null is an anonymous caller.
 */
export type Actor =
  | { kind: "user"; userId: string }
  | { kind: "app"; appId: string }
  | { kind: "render"; appId: string; userId: string | null }
  | null;

/**
 * A caller's relation to one app: the owner, the holder of the app's own token while it is
 * unclaimed, people it is shared with (`collaborator`, `end-user`, `viewer`; spec: Role
 * meanings), members of the team that owns a team app (`team-admin` for its owners and admins,
 * `team-member` for the rest), and `visitor` (anyone holding the URL of an unclaimed or public app).
 */
export type AppRole = "owner" | "team-admin" | "team-member" | "collaborator" | "app-token" | "end-user" | "viewer" | "visitor";

/** Widest first: a caller with two relations to an app (a share and visibility) gets the wider. */
const WIDTH: readonly AppRole[] = ["owner", "team-admin", "team-member", "collaborator", "app-token", "end-user", "viewer", "visitor"];

export function widest(a: AppRole | null, b: AppRole | null): AppRole | null {
  if (a === null || b === null) return a ?? b;
  return WIDTH.indexOf(a) <= WIDTH.indexOf(b) ? a : b;
}

/** Who may open a claimed app's page beyond its owner (DECISIONS §3). */
export const VISIBILITIES = ["private", "signed-in", "public"] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** What a role may do. New permissions are added here, next to the roles that grant them. */
export type AppPermission =
  /** GET /app/{id}/source and the source-carrying parts of describe. */
  | "source:read"
  /** PUT /app/{id}, PATCH /app/{id}/source. */
  | "source:write"
  /** Open the page, read describe and the icon. */
  | "view"
  /** Owner rights: delete, icon, and everything later issues reserve for owners. */
  | "manage";

const GRANTS: Record<AppRole, ReadonlySet<AppPermission>> = {
  owner: new Set(["source:read", "source:write", "view", "manage"]),
  // A team app has no owner person: the team's owners and admins hold the owner's rights.
  "team-admin": new Set(["source:read", "source:write", "view", "manage"]),
  "team-member": new Set(["source:read", "source:write", "view"]),
  // Edits and runs; never shares, deletes or transfers (those are `manage`).
  collaborator: new Set(["source:read", "source:write", "view"]),
  "app-token": new Set(["source:read", "source:write", "view"]),
  // Runs ops and writes data, never reads or edits source; viewers run only read ops (Operations).
  "end-user": new Set(["view"]),
  viewer: new Set(["view"]),
  visitor: new Set(["view"]),
};

/** The facts about an app that decide access. */
export interface AccessSubject {
  id: string;
  ownerUserId: string | null;
  visibility: Visibility;
}

/**
 * The caller's role on `app` from the app row alone, or null for no relation at all. Roles that
 * need other rows (shares, teams, visibility) are resolved by `Apps.roleOf`, which starts here.
 */
export function directRole(actor: Actor, app: AccessSubject): AppRole | null {
  const unclaimed = app.ownerUserId === null;
  if (actor !== null) {
    if (actor.kind === "user" && actor.userId === app.ownerUserId) return "owner";
    // An app token of a claimed app is refused earlier (401 token_revoked_post_claim).
    if (actor.kind === "app" && actor.appId === app.id && unclaimed) return "app-token";
    // Any signed-in user on a signed-in or public app runs it as an end-user (DECISIONS §4).
    if (actor.kind === "user" && app.visibility !== "private" && !unclaimed) return "end-user";
    // A render token acts as the person who loaded the page (DECISIONS §4), and only while that
    // person may still open it: its owner, anyone on a signed-in or public app, or (added by
    // Apps.roleOf) someone it is shared with or a member of its team. It views; it never holds
    // the owner's rights, whoever's page it came from.
    if (actor.kind === "render" && actor.appId === app.id) {
      if (actor.userId !== null && (actor.userId === app.ownerUserId || (app.visibility !== "private" && !unclaimed))) return "visitor";
    }
  }
  // The UUID of an unclaimed app is the capability (DECISIONS §5): anyone holding it may look.
  return unclaimed || app.visibility === "public" ? "visitor" : null;
}

export function can(role: AppRole | null, permission: AppPermission): boolean {
  return role !== null && GRANTS[role].has(permission);
}

/**
 * Throws unless `role` holds `permission`: 403 `forbidden` for an app that exists, whether the
 * caller has no relation to it or one that is not enough (spec Authentication rule 4, DECISIONS
 * §1); only an unknown id is 404, and that was decided before this.
 */
export function requirePermission(role: AppRole | null, app: AccessSubject, permission: AppPermission): AppRole {
  if (role === null) throw apiError("forbidden", "you have no access to this app");
  if (!can(role, permission)) {
    const why =
      app.ownerUserId === null && permission === "manage"
        ? "this app is unclaimed; claim it under an account to manage it"
        : `your role on this app (${role}) does not allow this`;
    throw apiError("forbidden", why);
  }
  return role;
}
