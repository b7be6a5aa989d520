import type { Kysely } from "kysely";
import type { Database } from "../../store/index.ts";
import type { AppRecord } from "../apps/queries.ts";
import { widest, type AppRole } from "./access.ts";

/** A relation that grants people roles on apps: Apps.roleOf asks each, and keeps the widest. */
export type RoleSource = (app: AppRecord, userId: string) => Promise<AppRole | null>;

/** The role an accepted share gives this person on this app, or null. */
export async function acceptedShareRole(db: Kysely<Database>, appId: string, userId: string): Promise<"collaborator" | "end-user" | "viewer" | null> {
  const row = await db
    .selectFrom("app_shares")
    .select("role")
    .where("app_id", "=", appId)
    .where("grantee_user_id", "=", userId)
    .where("status", "=", "accepted")
    .executeTakeFirst();
  return row?.role ?? null;
}

/** This person's role in a team (an account that owns apps), or null. */
export async function teamRole(db: Kysely<Database>, teamId: string, userId: string): Promise<"owner" | "admin" | "member" | null> {
  const row = await db.selectFrom("team_members").select("role").where("team_id", "=", teamId).where("user_id", "=", userId).executeTakeFirst();
  return row?.role ?? null;
}

/**
 * The relations that grant roles on apps, as Apps asks them: shares, and the team that owns a
 * team app. Each is a query of its own; the Shares and Teams services answer the same questions
 * through these functions.
 */
export function roleSources(db: Kysely<Database>): RoleSource[] {
  return [
    (app, userId) => acceptedShareRole(db, app.id, userId),
    async (app, userId) => {
      if (app.ownerUserId === null) return null;
      const role = await teamRole(db, app.ownerUserId, userId);
      return role === null ? null : role === "member" ? "team-member" : "team-admin";
    },
  ];
}

/**
 * The role a person holds on an app whatever its visibility: its owner's, or what shares and its
 * team give them. The end-user role a signed-in or public app gives everyone lasts only as long
 * as that visibility does.
 */
export async function heldRole(db: Kysely<Database>, app: AppRecord, userId: string): Promise<AppRole | null> {
  if (app.ownerUserId === userId) return "owner";
  let role: AppRole | null = null;
  for (const source of roleSources(db)) role = widest(role, await source(app, userId));
  return role;
}
