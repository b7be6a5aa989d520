import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("leases")
    .addColumn("name", "text", (c) => c.primaryKey())
    .addColumn("holder", "text", (c) => c.notNull())
    .addColumn("next_at", "bigint", (c) => c.notNull())
    .addColumn("claimed_at", "bigint", (c) => c.notNull())
    .execute();
}
