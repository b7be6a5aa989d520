import type { Generated } from "kysely";

/**
 * One row per app: who owns it, its current revision and the validated manifest of that
 * revision. The source of every revision lives in `app_versions`.
 */
export interface AppsTable {
  id: string;
  /** `manifest.id`; unique per owner (partial unique index over claimed rows). */
  manifest_id: string;
  display_name: string;
  /** Null while the app is unclaimed (anonymous); the claiming or creating user otherwise. */
  owner_user_id: string | null;
  claimed_at: number | null;
  /** Unclaimed apps only: when the reaper removes it (creation + 7 days); null once owned. */
  expires_at: number | null;
  /** Server-owned source revision: 1 at creation, +1 per successful source write. */
  revision: number;
  /** JSON of the normalized manifest of the current revision (see domain/apps/manifest-types.ts). */
  manifest: string;
  /** JSON `{emoji, bg}` set through PUT /app/{id}/icon; wins over the manifest's icon. */
  icon_override: string | null;
  /** Who may open the page beyond owner and shares (DECISIONS §3): private, signed-in, public. */
  visibility: Generated<"private" | "signed-in" | "public">;
  /** PUT /app/{id}/starter-prompt: leads the open-in-chat and copy-prompt text; null when unset. */
  starter_prompt: string | null;
  /** 1: anyone may copy it while it is public (PUT /app/{id}/remixable). */
  remixable: Generated<number>;
  /** The app this one was copied from; null for an original. */
  copied_from: string | null;
  created_at: number;
  updated_at: number;
  /** Set while an operator has suspended the app (DECISIONS §15): its data is kept, nothing of it runs. */
  suspended_at: number | null;
  suspended_reason: string | null;
}
