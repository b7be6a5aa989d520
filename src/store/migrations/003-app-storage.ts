import type { Kysely } from "kysely";
import { bytesType, type Dialect } from "../dialect.ts";

// app_id columns carry no foreign key yet: the apps table arrives in migration 002 on another
// branch. The merge adds `references apps(id) on delete cascade` to each app_id below.
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("app_kv")
    .addColumn("app_id", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("value", "text", (c) => c.notNull())
    .addColumn("size", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("app_kv_pk", ["app_id", "key"])
    .execute();

  await db.schema
    .createTable("app_blobs")
    .addColumn("app_id", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("data", bytesType(dialect), (c) => c.notNull())
    .addColumn("content_type", "text", (c) => c.notNull())
    .addColumn("size", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("app_blobs_pk", ["app_id", "key"])
    .execute();

  await db.schema
    .createTable("app_storage_usage")
    .addColumn("app_id", "text", (c) => c.primaryKey())
    .addColumn("bytes", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("activity_events")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull())
    .addColumn("ts", "bigint", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("revision", "bigint", (c) => c.notNull())
    .addColumn("summary", "text", (c) => c.notNull())
    .addColumn("data", "text", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("activity_events_app_ts").on("activity_events").columns(["app_id", "ts"]).execute();
  await db.schema.createIndex("activity_events_ts").on("activity_events").column("ts").execute();

  await db.schema
    .createTable("activity_counts")
    .addColumn("app_id", "text", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("day", "bigint", (c) => c.notNull())
    .addColumn("count", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("activity_counts_pk", ["app_id", "kind", "day"])
    .execute();
}
