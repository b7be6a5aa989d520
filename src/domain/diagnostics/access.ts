import { apiError } from "../../errors/index.ts";

/** Who asks, as the HTTP layer resolved it (http/auth.ts Principal, plus the claim cookie). */
export type DiagnosticsCaller =
  | { kind: "user"; userId: string; via: "token" | "session" }
  | { kind: "app"; appId: string }
  | { kind: "render"; appId: string; userId: string | null }
  | { kind: "claim_cookie"; appId: string }
  | null;

/** The one fact about an app these reads need; the apps service supplies it. */
export interface AppOwnership {
  id: string;
  /** Null while the app is anonymous-owned (unclaimed). */
  ownerUserId: string | null;
}

/**
 * `GET /app/{id}/diag` (spec Authentication rule 1): the app's own app token, the owner's user
 * token, or a render token bound to the app acting for the owner. Anyone else: 403.
 */
export function authorizeDiag(caller: DiagnosticsCaller, app: AppOwnership): void {
  if (caller === null) throw apiError("unauthorized", "send the app token, the owner's user token or a render token");
  if (caller.kind === "app" && caller.appId === app.id) return;
  if (caller.kind === "user" && app.ownerUserId !== null && caller.userId === app.ownerUserId) return;
  if (caller.kind === "render" && caller.appId === app.id && app.ownerUserId !== null && caller.userId === app.ownerUserId) return;
  throw apiError("forbidden", "only the app's owner may read its diagnostics");
}

/**
 * `GET /app/{id}/activity`: only the app token or the owner's user credential; render tokens
 * and claim cookies are refused even when they belong to the app.
 */
export function authorizeActivity(caller: DiagnosticsCaller, app: AppOwnership): void {
  if (caller === null) throw apiError("unauthorized", "send the app token or the owner's user token");
  if (caller.kind === "app" && caller.appId === app.id) return;
  if (caller.kind === "user" && app.ownerUserId !== null && caller.userId === app.ownerUserId) return;
  throw apiError("forbidden", "only the app token or the owner's user token may read activity");
}
