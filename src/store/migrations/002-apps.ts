import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("apps")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("manifest_id", "text", (c) => c.notNull())
    .addColumn("display_name", "text", (c) => c.notNull())
    .addColumn("owner_user_id", "text", (c) => c.references("users.id").onDelete("cascade"))
    .addColumn("claimed_at", "bigint")
    .addColumn("expires_at", "bigint")
    .addColumn("revision", "integer", (c) => c.notNull())
    .addColumn("manifest", "text", (c) => c.notNull())
    .addColumn("icon_override", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  // The upsert key of an authenticated create, and what keeps a claim from doubling a manifest id.
  await db.schema
    .createIndex("apps_owner_manifest")
    .on("apps")
    .columns(["owner_user_id", "manifest_id"])
    .unique()
    .where(sql.ref("owner_user_id"), "is not", null)
    .execute();
  // GET /app pages by (created_at, id) newest first.
  await db.schema.createIndex("apps_owner_created").on("apps").columns(["owner_user_id", "created_at", "id"]).execute();
  // The reaper looks for unclaimed rows past their expiry.
  await db.schema.createIndex("apps_expires_at").on("apps").column("expires_at").where(sql.ref("expires_at"), "is not", null).execute();

  await db.schema
    .createTable("app_versions")
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("revision", "integer", (c) => c.notNull())
    .addColumn("module", "text", (c) => c.notNull())
    .addColumn("ui", "text")
    .addColumn("styles", "text")
    .addColumn("manifest", "text", (c) => c.notNull())
    .addColumn("size_bytes", "bigint", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("app_versions_pk", ["app_id", "revision"])
    .execute();
}
