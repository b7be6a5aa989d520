import type { Kysely } from "kysely";

/**
 * A counter per app bumped by every committed write of its values on PostgreSQL, read with the
 * app's row on each op call: an instance whose workerd caches hold an app's KV reads learns from
 * it that another instance wrote (see src/executor/data-versions.ts). SQLite has one writer and
 * leaves it at 0.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("app_storage_usage")
    .addColumn("data_version", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
}
