import type { Kysely } from "kysely";
import { apiError, recovery } from "../../errors/index.ts";
import { isUniqueViolation, type Database } from "../../store/index.ts";
import { hashToken } from "../tokens/format.ts";
import type { PairingSeam } from "./pairing-seam.ts";
import { findApp, findOwnedByManifestId, type AppRecord } from "./queries.ts";
import { canonicalUrl } from "./urls.ts";
import { writeAudit, type AuditContext } from "../operators/audit.ts";

export interface ClaimDeps {
  db: Kysely<Database>;
  now: number;
  baseUrl: string;
  pairing: PairingSeam | null;
}

/**
 * POST /app/{id}/claim (spec "App ownership and lifetime"): a signed-in user presenting the app's
 * own token takes ownership. In one transaction: the owner is set and the expiry cleared (only if
 * still unclaimed, so two claims cannot both win), the app's tokens and render tokens are revoked
 * with reason `claimed` (their later use is 401 token_revoked_post_claim), and a bound pairing is
 * approved.
 */
export async function claimApp(deps: ClaimDeps, app: AppRecord, userId: string, token: string, audit?: AuditContext): Promise<AppRecord> {
  if (app.ownerUserId !== null) throw apiError("already_claimed", "this app has already been claimed");
  const row = await deps.db
    .selectFrom("tokens")
    .select(["id", "expires_at", "revoked_at", "revoked_reason"])
    .where("hash", "=", hashToken(token))
    .where("kind", "=", "app")
    .where("app_id", "=", app.id)
    .executeTakeFirst();
  // A concurrent claim may have won between our read of the app and this lookup.
  if (row?.revoked_reason === "claimed") throw apiError("already_claimed", "this app has already been claimed");
  if (row === undefined || row.revoked_at !== null || (row.expires_at !== null && deps.now >= row.expires_at)) {
    throw apiError("forbidden", "the token in the body is not this app's per-app token");
  }
  try {
    await deps.db.transaction().execute(async (trx) => {
      // First, so that a claim failing after it (taken meanwhile, a manifest id the claimer
      // already uses) rolls its row back with everything else.
      if (audit !== undefined) await writeAudit(trx, deps.now, audit, { action: "app.claim", target: { kind: "app", id: app.id }, detail: { manifestId: app.manifestId } });
      const moved = await trx
        .updateTable("apps")
        .set({ owner_user_id: userId, claimed_at: deps.now, expires_at: null, updated_at: deps.now })
        .where("id", "=", app.id)
        .where("owner_user_id", "is", null)
        .executeTakeFirst();
      if (moved.numUpdatedRows === 0n) throw apiError("already_claimed", "this app has already been claimed");
      // And the render tokens made for people: made while anyone holding the URL could open it,
      // they went into "open in chat" links and prompts, and the claimant's would act as the
      // owner. Anonymous visitors' (shared, acting for no one) open a claimed app only if it is
      // made public, as anyone's page would.
      await trx
        .updateTable("tokens")
        .set({ revoked_at: deps.now, revoked_reason: "claimed" })
        .where("app_id", "=", app.id)
        .where((eb) => eb.or([eb("kind", "=", "app"), eb.and([eb("kind", "=", "render"), eb("user_id", "is not", null)])]))
        .where("revoked_at", "is", null)
        .execute();
      // Pairing plugs in here: the device code minted with the app is approved for this user.
      if (deps.pairing !== null) await deps.pairing.approveBoundPairing(trx, { appId: app.id, userId });
    });
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    // The user already owns an app with this manifest id: the (owner, manifest id) key is taken.
    const holder = await findOwnedByManifestId(deps.db, userId, app.manifestId);
    throw apiError(
      "manifest_id_conflict",
      `you already own an app with manifest id "${app.manifestId}"`,
      {
        ...(holder === null ? {} : { existingAppId: holder.id }),
        recovery: recovery.rename(
          `Manifest ids cannot change, so either delete your existing "${app.manifestId}"` +
            (holder === null ? "" : ` (${canonicalUrl(deps.baseUrl, holder)})`) +
            " and claim again, or GET this app's source and POST it to /app under a new manifest.id with your user token.",
        ),
      },
    );
  }
  const claimed = await findApp(deps.db, app.id);
  if (claimed === null) throw apiError("app_not_found", `no app ${app.id}`);
  return claimed;
}
