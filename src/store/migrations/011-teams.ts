import { sql, type Kysely } from "kysely";

/**
 * Teams (issue 15, DECISIONS §9). A team is an account of kind `team` in `users`: its slug is
 * the account's handle (one namespace for `/@handle` and `/@teamSlug`), its plan the account's
 * plan, and a team app's owner is that account, so URLs, secrets, caps and the upgrade link all
 * follow from the owner as they do for a person. A team account has no password that any login
 * matches and no deliverable address; people act on its apps through their membership.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("users").addColumn("kind", "text", (c) => c.notNull().defaultTo("person")).execute();
  await db.schema
    .createTable("teams")
    .addColumn("id", "text", (c) => c.primaryKey().references("users.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("created_by", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("team_members")
    .addColumn("team_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("role", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("team_members_pk", ["team_id", "user_id"])
    .execute();
  await db.schema.createIndex("team_members_user").on("team_members").column("user_id").execute();
  await db.schema
    .createTable("team_invitations")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("team_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("role", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("invited_by", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("accepted_by", "text")
    .addColumn("accepted_at", "bigint")
    .execute();
  // One pending invitation per address and team: a re-send replaces it (spec: team invitation resend).
  await db.schema
    .createIndex("team_invitations_pending")
    .on("team_invitations")
    .columns(["team_id", "email"])
    .unique()
    .where(sql.ref("status"), "=", "pending")
    .execute();
}
