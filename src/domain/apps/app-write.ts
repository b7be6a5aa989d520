import { apiError } from "../../errors/index.ts";
import { can, roleOf, type AccessSubject, type Actor } from "./access.ts";

/**
 * The spec's `app:write` (routines, webhooks): a signed-in user whose role may edit the app's
 * source. Today that is the owner; shares and teams extend `roleOf`, and this follows. A caller
 * without it gets 404 so the app's existence is not confirmed; an unclaimed app has no owner to
 * hold a routine or webhook, so it must be claimed first (403 `app_unclaimed`).
 */
export function requireAppWrite(userId: string, app: AccessSubject): void {
  const actor: Actor = { kind: "user", userId };
  if (app.ownerUserId === null) throw apiError("app_unclaimed", "claim this app under your account before adding routines or webhooks to it");
  if (!can(roleOf(actor, app), "source:write")) throw apiError("app_not_found", `no app ${app.id}`);
}
