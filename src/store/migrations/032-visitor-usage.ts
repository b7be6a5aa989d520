import { sql, type Kysely } from "kysely";

/**
 * What visitors' stores hold, kept as running totals (runtime/storage/visitor-kv.ts): a row per
 * visitor's store (its bytes, its keys' cost as limits.ts counts it, and its last write, which
 * the sweep goes by) and a row per app (all of its visitors' together). A write used to sum
 * every row of the app's visitors to check the all-visitors cap: a cost that grew with what
 * anyone had stored, on Node's thread with SQLite. Filled from the values already stored.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("visitor_stores")
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("visitor_id", "text", (c) => c.notNull())
    .addColumn("bytes", "bigint", (c) => c.notNull())
    .addColumn("key_bytes", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("visitor_stores_pk", ["app_id", "visitor_id"])
    .execute();
  await db.schema.createIndex("visitor_stores_updated").on("visitor_stores").column("updated_at").execute();
  await db.schema
    .createTable("visitor_totals")
    .addColumn("app_id", "text", (c) => c.primaryKey().references("apps.id").onDelete("cascade"))
    .addColumn("bytes", "bigint", (c) => c.notNull())
    .addColumn("key_bytes", "bigint", (c) => c.notNull())
    .execute();
  await sql`insert into visitor_stores (app_id, visitor_id, bytes, key_bytes, updated_at)
    select app_id, visitor_id, sum(size), sum(octet_length(key) + 64), max(updated_at) from visitor_kv group by app_id, visitor_id`.execute(db);
  await sql`insert into visitor_totals (app_id, bytes, key_bytes) select app_id, sum(size), sum(octet_length(key) + 64) from visitor_kv group by app_id`.execute(db);
}
