import type { Kysely } from "kysely";

/**
 * Values kept as objects in the blob store when it is S3 (blobs/objects.ts): an app's blob values
 * (env.BLOB), snapshots' captured blobs and build bundles, each object named by the sha256 of its
 * bytes, so equal content is one object however many rows refer to it (a snapshot and a copy
 * share their app's). A row refers to its object by `object_hash` and keeps no bytes of its own
 * (empty `data`, empty `bundle`); rows written before, or with files as the blob store, keep
 * their bytes as before.
 *
 * `blob_objects` has a row per object, written before the object is: a write killed after it
 * leaves a row nothing refers to, which the sweep removes with its object once it has been left
 * alone for a while (`touched_at`; each new reference's write touches it first).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("blob_objects")
    .addColumn("hash", "text", (c) => c.primaryKey())
    .addColumn("size", "bigint", (c) => c.notNull())
    .addColumn("touched_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("blob_objects_touched").on("blob_objects").column("touched_at").execute();
  for (const table of ["app_blobs", "snapshot_values", "build_bundles"]) {
    await db.schema.alterTable(table).addColumn("object_hash", "text").execute();
    await db.schema.createIndex(`${table}_object_hash`).on(table).column("object_hash").execute();
  }
}
