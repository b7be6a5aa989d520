import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("users")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("email", "text", (c) => c.notNull().unique())
    .addColumn("handle", "text", (c) => c.notNull().unique())
    .addColumn("password_hash", "text", (c) => c.notNull())
    .addColumn("plan", "text", (c) => c.notNull().defaultTo("free"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("sessions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_seen_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("sessions_user_id").on("sessions").column("user_id").execute();

  await db.schema
    .createTable("tokens")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("hash", "text", (c) => c.notNull().unique())
    .addColumn("prefix", "text", (c) => c.notNull())
    .addColumn("name", "text")
    .addColumn("source", "text")
    .addColumn("user_id", "text", (c) => c.references("users.id").onDelete("cascade"))
    // No foreign key: apps arrive in a later migration, and app deletion removes its tokens itself.
    .addColumn("app_id", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint")
    .addColumn("revoked_at", "bigint")
    .addColumn("revoked_reason", "text")
    .addColumn("last_used_at", "bigint")
    .execute();
  await db.schema.createIndex("tokens_user_id").on("tokens").columns(["user_id", "kind"]).execute();
  await db.schema.createIndex("tokens_app_id").on("tokens").columns(["app_id", "kind"]).execute();
}
