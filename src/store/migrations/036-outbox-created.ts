import type { Kysely } from "kysely";

/** The outbox is swept by age (Mailer.sweep, 30 days): an index on when each message was written. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex("outbox_created").on("outbox").column("created_at").execute();
}
