import { apiError } from "../../errors/index.ts";
import { can, type AppRole } from "../access/access.ts";
import type { AppRecord } from "../apps/queries.ts";

/** Who asks, as the HTTP layer resolved it (http/auth.ts Principal, plus the claim cookie). */
export type DiagnosticsCaller =
  | { kind: "user"; userId: string; via: "token" | "session" | "oauth" }
  | { kind: "app"; appId: string }
  | { kind: "render"; appId: string; userId: string | null }
  | { kind: "claim_cookie"; appId: string }
  | null;

/** The access decision these reads defer to (`Apps.roleOf`). */
export interface RoleOracle {
  roleOf(actor: { kind: "user"; userId: string }, app: AppRecord): Promise<AppRole | null>;
}

/**
 * `GET /app/{id}/diag` (spec Authentication rule 1): the app's own app token, or the credential
 * of someone with the owner's rights (the owner; a team app's owners and admins), directly or
 * through a render token bound to the app. Anyone else: 403.
 */
export async function authorizeDiag(caller: DiagnosticsCaller, app: AppRecord, apps: RoleOracle): Promise<void> {
  if (caller === null) throw apiError("unauthorized", "send the app token, the owner's user token or a render token");
  if (caller.kind === "app" && caller.appId === app.id) return;
  const userId = caller.kind === "user" ? caller.userId : caller.kind === "render" && caller.appId === app.id ? caller.userId : null;
  if (await manages(apps, userId, app)) return;
  throw apiError("forbidden", "only the app's owner may read its diagnostics");
}

/**
 * `GET /app/{id}/activity`: only the app token or an owner's user credential; render tokens
 * and claim cookies are refused even when they belong to the app.
 */
export async function authorizeActivity(caller: DiagnosticsCaller, app: AppRecord, apps: RoleOracle): Promise<void> {
  if (caller === null) throw apiError("unauthorized", "send the app token or the owner's user token");
  if (caller.kind === "app" && caller.appId === app.id) return;
  if (await manages(apps, caller.kind === "user" ? caller.userId : null, app)) return;
  throw apiError("forbidden", "only the app token or the owner's user token may read activity");
}

async function manages(apps: RoleOracle, userId: string | null, app: AppRecord): Promise<boolean> {
  return userId !== null && app.ownerUserId !== null && can(await apps.roleOf({ kind: "user", userId }, app), "manage");
}
