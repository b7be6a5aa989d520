import type { Kysely } from "kysely";

/**
 * Idempotency-Key on POST /app and PUT /app/{id} (issue 17, DECISIONS §10): the first answer to
 * a key, kept 24 hours per (caller, request line, key), replayed for the same body.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("idempotency_records")
    // `user:<id>`, `app:<id>`, or `ip:<address>` for anonymous callers.
    .addColumn("scope", "text", (c) => c.notNull())
    .addColumn("request_line", "text", (c) => c.notNull())
    .addColumn("idempotency_key", "text", (c) => c.notNull())
    .addColumn("body_hash", "text", (c) => c.notNull())
    // Null while the first request is under way.
    .addColumn("status", "integer")
    .addColumn("response", "text")
    .addColumn("etag", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("idempotency_records_pk", ["scope", "request_line", "idempotency_key"])
    .execute();
  await db.schema.createIndex("idempotency_records_created").on("idempotency_records").column("created_at").execute();
}
