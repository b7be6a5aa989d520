import type { Kysely } from "kysely";

/**
 * Templates (issue 16, DECISIONS §9): an app's listing (draft content, enabled, listed, the
 * revision it was published at), its media (stored as assets of the app), and the people who
 * built from it (the `builders` count).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("template_listings")
    .addColumn("app_id", "text", (c) => c.primaryKey().references("apps.id").onDelete("cascade"))
    .addColumn("title", "text")
    .addColumn("summary", "text")
    .addColumn("content_markdown", "text")
    .addColumn("category", "text")
    .addColumn("enabled", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("published_revision", "integer")
    .addColumn("published_at", "bigint")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("template_listings_published").on("template_listings").columns(["enabled", "published_at"]).execute();
  await db.schema
    .createTable("template_media")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("asset_key", "text", (c) => c.notNull())
    .addColumn("alt", "text", (c) => c.notNull())
    .addColumn("caption", "text")
    .addColumn("position", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("template_media_app").on("template_media").columns(["app_id", "position"]).execute();
  await db.schema
    .createTable("template_builders")
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("template_builders_pk", ["app_id", "user_id"])
    .execute();
}
