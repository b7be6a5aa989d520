import { can, type Actor } from "../access/access.ts";
import type { AppRecord } from "../apps/queries.ts";
import type { RoleOracle } from "../diagnostics/access.ts";
import { apiError } from "../../errors/index.ts";
import type { SecretScope } from "./secrets.ts";

/**
 * Secrets are the owner's (spec Authentication rule 1): only a user credential with the owner's
 * rights reaches them (the owner; a team app's owners and admins, whose secrets are the team's);
 * app and render tokens are refused even for their own app, and an unclaimed app has no owner to
 * hold secrets for.
 */
export async function ownerSecretScope(actor: Actor, app: AppRecord, apps: RoleOracle): Promise<SecretScope> {
  if (actor === null) throw apiError("sign_in_required", "sign in, or send the owner's user token");
  if (actor.kind !== "user") throw apiError("forbidden", `secrets need the owner's user token; a ${actor.kind} token cannot read or change them`);
  if (app.ownerUserId === null) throw apiError("forbidden", "this app is unclaimed; claim it under an account to give it secrets");
  if (!can(await apps.roleOf(actor, app), "manage")) throw apiError("forbidden", "only the app's owner manages its secrets");
  return { ownerUserId: app.ownerUserId, manifestId: app.manifestId };
}
