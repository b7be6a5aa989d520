import type { Kysely } from "kysely";

/**
 * Op calls and failures per app per UTC hour (issue 19: the console's chart). Each instance
 * counts in memory and adds its counts every few seconds, so a call costs no write of its own.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("op_call_counts")
    .addColumn("app_id", "text", (c) => c.notNull())
    // The hour's start, epoch ms.
    .addColumn("hour", "bigint", (c) => c.notNull())
    .addColumn("calls", "bigint", (c) => c.notNull())
    .addColumn("failures", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("op_call_counts_pk", ["app_id", "hour"])
    .execute();
  await db.schema.createIndex("op_call_counts_hour").on("op_call_counts").column("hour").execute();
}
