import type { Actor } from "../apps/access.ts";
import type { AppRecord } from "../apps/queries.ts";
import { apiError } from "../../errors/index.ts";
import type { SecretScope } from "./secrets.ts";

/**
 * Secrets are the owner's alone (spec Authentication rule 1): only the owner's user credential
 * reaches them; app and render tokens are refused even for their own app, and an unclaimed
 * app has no owner to hold secrets for.
 */
export function ownerSecretScope(actor: Actor, app: AppRecord): SecretScope {
  if (actor === null) throw apiError("sign_in_required", "sign in, or send the owner's user token");
  if (actor.kind !== "user") throw apiError("forbidden", `secrets need the owner's user token; a ${actor.kind} token cannot read or change them`);
  if (app.ownerUserId === null) throw apiError("forbidden", "this app is unclaimed; claim it under an account to give it secrets");
  if (actor.userId !== app.ownerUserId) throw apiError("forbidden", "only the app's owner manages its secrets");
  return { ownerUserId: app.ownerUserId, manifestId: app.manifestId };
}
