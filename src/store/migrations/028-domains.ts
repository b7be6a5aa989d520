import { sql, type Kysely } from "kysely";

/**
 * Custom domains (DECISIONS §12): an app served at its owner's hostname once a TXT record proves
 * the owner holds it. One app serves a hostname (unique among verified and failing rows); several
 * may claim it while pending, so nobody can hold a name they never proved. The app's deletion
 * takes its domains.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("app_domains")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("hostname", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("token", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("verified_at", "bigint")
    .addColumn("checked_at", "bigint")
    .addColumn("missing_since", "bigint")
    .execute();
  await db.schema.createIndex("app_domains_app").on("app_domains").columns(["app_id", "hostname"]).unique().execute();
  await db.schema.createIndex("app_domains_served").on("app_domains").column("hostname").unique().where(sql.ref("state"), "<>", "pending").execute();
  await db.schema.createIndex("app_domains_checked").on("app_domains").columns(["state", "checked_at"]).execute();
}
