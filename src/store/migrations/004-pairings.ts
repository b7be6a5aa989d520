import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("pairings")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("device_code_hash", "text", (c) => c.notNull().unique())
    .addColumn("user_code", "text", (c) => c.notNull().unique())
    .addColumn("label", "text")
    // No foreign key: the apps table arrives in its own migration; app deletion removes its pairings.
    .addColumn("app_id", "text")
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("user_id", "text", (c) => c.references("users.id").onDelete("cascade"))
    .addColumn("interval_sec", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("last_polled_at", "bigint")
    .addColumn("decided_at", "bigint")
    .addColumn("consumed_at", "bigint")
    .execute();
  await db.schema.createIndex("pairings_app_id").on("pairings").columns(["app_id", "status"]).execute();
  await db.schema.createIndex("pairings_expires_at").on("pairings").column("expires_at").execute();

  await db.schema
    .createTable("pairing_guards")
    .addColumn("user_id", "text", (c) => c.primaryKey().references("users.id").onDelete("cascade"))
    .addColumn("failures", "integer", (c) => c.notNull())
    .addColumn("window_start", "bigint", (c) => c.notNull())
    .addColumn("locked_until", "bigint")
    .execute();
}
