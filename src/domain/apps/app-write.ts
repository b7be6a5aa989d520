import { apiError } from "../../errors/index.ts";
import { requirePermission } from "../access/access.ts";
import type { Apps } from "./apps.ts";
import type { AppRecord } from "./queries.ts";

/**
 * The spec's `app:write` (routines, webhooks): a signed-in user whose role may edit the app's
 * source, decided by `Apps.roleOf` like every other access check. A caller with no relation to
 * the app gets 404 so its existence is not confirmed; one whose role is not enough (an end-user,
 * a viewer) gets 403. An unclaimed app has no owner to hold a routine or webhook, so it must be
 * claimed first (403 `app_unclaimed`).
 */
export async function requireAppWrite(apps: Pick<Apps, "roleOf">, userId: string, app: AppRecord): Promise<void> {
  if (app.ownerUserId === null) throw apiError("app_unclaimed", "claim this app under your account before adding routines or webhooks to it");
  requirePermission(await apps.roleOf({ kind: "user", userId }, app), app, "source:write");
}
