import type { Kysely } from "kysely";

/** Copies that need a build (issue 17): what the copy carries over when the build publishes (JSON). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("builds").addColumn("copy", "text").execute();
}
