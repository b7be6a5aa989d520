import type { Kysely } from "kysely";
import { bytesType, type Dialect } from "../dialect.ts";

/**
 * Data snapshots (issue 16): an app's KV values and blobs captured by content. Values are stored
 * once per content hash, so a snapshot of data that has not changed since the last one adds only
 * its index rows; values no snapshot refers to any more are swept when snapshots are pruned.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("app_snapshots")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("revision", "integer", (c) => c.notNull())
    .addColumn("keys", "integer", (c) => c.notNull())
    .addColumn("bytes", "bigint", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("app_snapshots_app").on("app_snapshots").columns(["app_id", "created_at"]).execute();
  await db.schema
    .createTable("snapshot_entries")
    .addColumn("snapshot_id", "text", (c) => c.notNull().references("app_snapshots.id").onDelete("cascade"))
    .addColumn("store", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("hash", "text", (c) => c.notNull())
    .addColumn("size", "integer", (c) => c.notNull())
    .addColumn("content_type", "text")
    .addPrimaryKeyConstraint("snapshot_entries_pk", ["snapshot_id", "store", "key"])
    .execute();
  await db.schema.createIndex("snapshot_entries_hash").on("snapshot_entries").column("hash").execute();
  await db.schema
    .createTable("snapshot_values")
    .addColumn("hash", "text", (c) => c.primaryKey())
    .addColumn("data", bytesType(dialect), (c) => c.notNull())
    .addColumn("size", "integer", (c) => c.notNull())
    .execute();
}
