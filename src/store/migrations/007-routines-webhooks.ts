import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("routines")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("op", "text", (c) => c.notNull())
    .addColumn("interval", "text", (c) => c.notNull())
    .addColumn("enabled", "integer", (c) => c.notNull())
    .addColumn("disabled_reason", "text")
    .addColumn("next_run_at", "bigint", (c) => c.notNull())
    .addColumn("last_run_at", "bigint")
    .addColumn("last_outcome", "text")
    .addColumn("last_error", "text")
    .addColumn("consecutive_failures", "integer", (c) => c.notNull())
    .addColumn("missed_runs", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addUniqueConstraint("routines_app_op", ["app_id", "op"])
    .execute();
  // The scheduler's scan: enabled routines whose slot has come.
  await db.schema.createIndex("routines_due").on("routines").columns(["enabled", "next_run_at"]).execute();

  await db.schema
    .createTable("webhooks")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("op", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("secret_hash", "text", (c) => c.notNull())
    .addColumn("secret_prefix", "text", (c) => c.notNull())
    .addColumn("enabled", "integer", (c) => c.notNull())
    .addColumn("disabled_reason", "text")
    .addColumn("last_run_at", "bigint")
    .addColumn("last_outcome", "text")
    .addColumn("last_error", "text")
    .addColumn("consecutive_failures", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addUniqueConstraint("webhooks_app_op", ["app_id", "op"])
    .execute();

  // No foreign key to webhooks: a deleted webhook's records stay to age out (spec Limits).
  // `seq` orders records that share a millisecond; an autoincrementing key is spelled per dialect.
  const seq = db.schema.createTable("webhook_deliveries");
  await (dialect === "sqlite" ? seq.addColumn("seq", "integer", (c) => c.primaryKey().autoIncrement()) : seq.addColumn("seq", "bigserial", (c) => c.primaryKey()))
    .addColumn("id", "text", (c) => c.notNull().unique())
    .addColumn("webhook_id", "text", (c) => c.notNull())
    .addColumn("app_id", "text", (c) => c.notNull().references("apps.id").onDelete("cascade"))
    .addColumn("ts", "bigint", (c) => c.notNull())
    .addColumn("status", "integer", (c) => c.notNull())
    .addColumn("outcome", "text", (c) => c.notNull())
    .addColumn("refusal", "text")
    .addColumn("request_bytes", "bigint", (c) => c.notNull())
    .addColumn("request_body", "text")
    .addColumn("request_truncated", "integer", (c) => c.notNull())
    .addColumn("response_bytes", "bigint", (c) => c.notNull())
    .addColumn("response_body", "text")
    .addColumn("response_truncated", "integer", (c) => c.notNull())
    .addColumn("duration_ms", "integer", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("webhook_deliveries_hook_ts").on("webhook_deliveries").columns(["webhook_id", "ts"]).execute();
  // Retention sweeps scan by age.
  await db.schema.createIndex("webhook_deliveries_ts").on("webhook_deliveries").column("ts").execute();
}
