import type { Kysely } from "kysely";

/**
 * Per-visitor stores (spec: "anonymous visitors on a custom domain get their own"; DECISIONS §12):
 * a visitor's KV values, keyed by the app and the visitor's first-party cookie. They go with
 * the app (cascade), and each visitor's store has the app's caps.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("visitor_kv")
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("visitor_id", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("value", "text", (c) => c.notNull())
    .addColumn("size", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("visitor_kv_pk", ["app_id", "visitor_id", "key"])
    .execute();
}
