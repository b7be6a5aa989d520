import type { Kysely } from "kysely";

/**
 * Copies (issue 16, DECISIONS §9): whether anyone may copy a public app, which app a copy came
 * from (to answer `duplicate_remix` and count a template's builders), and idempotency records
 * of copy requests, 24 hours per (caller, source, key).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("apps").addColumn("remixable", "integer", (c) => c.notNull().defaultTo(0)).execute();
  // No foreign key: a copy outlives its source.
  await db.schema.alterTable("apps").addColumn("copied_from", "text").execute();
  await db.schema.createIndex("apps_copied_from").on("apps").column("copied_from").execute();
  await db.schema
    .createTable("copy_requests")
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("source_app_id", "text", (c) => c.notNull())
    .addColumn("idempotency_key", "text", (c) => c.notNull())
    .addColumn("body_hash", "text", (c) => c.notNull())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("copy_requests_pk", ["user_id", "source_app_id", "idempotency_key"])
    .execute();
}
