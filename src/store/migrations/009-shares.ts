import type { Kysely } from "kysely";

/** Share invitations and grants, one row per (app, grantee), and share links (issue 15). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("app_shares")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("grantee_user_id", "text", (c) => c.references("users.id").onDelete("cascade"))
    .addColumn("grantee_email", "text")
    .addColumn("role", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("invited_by", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("accepted_at", "bigint")
    // Set on grants made by opening a share link: they go when the link is revoked.
    .addColumn("link_id", "text")
    .execute();
  await db.schema.createIndex("app_shares_app_user").on("app_shares").columns(["app_id", "grantee_user_id"]).unique().execute();
  await db.schema.createIndex("app_shares_app_email").on("app_shares").columns(["app_id", "grantee_email"]).unique().execute();
  await db.schema.createIndex("app_shares_grantee").on("app_shares").column("grantee_user_id").execute();
  await db.schema.createIndex("app_shares_link").on("app_shares").column("link_id").execute();
  await db.schema
    .createTable("app_share_links")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("role", "text", (c) => c.notNull())
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("created_by", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("app_share_links_app").on("app_share_links").column("app_id").execute();
  await db.schema.createIndex("app_shares_inviter").on("app_shares").columns(["invited_by", "created_at"]).execute();
}
