import { apiError } from "../../errors/index.ts";
import { can } from "./access.ts";
import type { Apps } from "./apps.ts";
import type { AppRecord } from "./queries.ts";

/**
 * The spec's `app:write` (routines, webhooks): a signed-in user whose role may edit the app's
 * source, decided by `Apps.roleOf` like every other access check. A caller without it gets 404
 * so the app's existence is not confirmed; an unclaimed app has no owner to hold a routine or
 * webhook, so it must be claimed first (403 `app_unclaimed`).
 */
export async function requireAppWrite(apps: Pick<Apps, "roleOf">, userId: string, app: AppRecord): Promise<void> {
  if (app.ownerUserId === null) throw apiError("app_unclaimed", "claim this app under your account before adding routines or webhooks to it");
  if (!can(await apps.roleOf({ kind: "user", userId }, app), "source:write")) throw apiError("app_not_found", `no app ${app.id}`);
}
