import type { Kysely } from "kysely";

/** Apps in the browser (issue 7): visibility and starter prompt on apps, assets, feedback. */
export async function up(db: Kysely<unknown>): Promise<void> {
  // DECISIONS §3: private by default; signed-in and public widen who may open the page.
  await db.schema.alterTable("apps").addColumn("visibility", "text", (c) => c.notNull().defaultTo("private")).execute();
  await db.schema.alterTable("apps").addColumn("starter_prompt", "text").execute();

  // Asset metadata; the bytes live in the blob store under `blob_key`.
  await db.schema
    .createTable("assets")
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("blob_key", "text", (c) => c.notNull())
    .addColumn("content_type", "text", (c) => c.notNull())
    .addColumn("size_bytes", "bigint", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("assets_pk", ["app_id", "key"])
    .execute();

  await db.schema
    .createTable("feedback")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("text", "text", (c) => c.notNull())
    .addColumn("structured_data", "text")
    .addColumn("email", "text")
    .addColumn("user_id", "text")
    .addColumn("revision", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("feedback_app_created").on("feedback").columns(["app_id", "created_at"]).execute();
}
