import type { Transaction } from "kysely";
import type { Dialect } from "./dialect.ts";
import type { Database } from "./schema/index.ts";

/**
 * Holds the usage rows of the apps a write transaction touches until it ends, creating the
 * missing ones at 0 bytes. PostgreSQL locks them (`for update`) in app-id order, one order for
 * every instance, so two transactions queue instead of deadlocking. SQLite needs nothing:
 * Kysely runs it on one connection and a transaction holds that until it commits; an app's
 * first write there creates its row through `ensureUsageRow`.
 */
export async function lockUsageRows(trx: Transaction<Database>, dialect: Dialect, appIds: readonly string[]): Promise<void> {
  if (dialect === "sqlite" || appIds.length === 0) return;
  const sorted = [...appIds].sort();
  await trx
    .insertInto("app_storage_usage")
    .values(sorted.map((app_id) => ({ app_id, bytes: 0 })))
    .onConflict((oc) => oc.column("app_id").doNothing())
    .execute();
  await trx.selectFrom("app_storage_usage").select("app_id").where("app_id", "in", sorted).orderBy("app_id").forUpdate().execute();
}

/** Creates an app's usage row at 0 bytes if it has none (inside the locking transaction). */
export async function ensureUsageRow(trx: Transaction<Database>, appId: string): Promise<void> {
  await trx
    .insertInto("app_storage_usage")
    .values({ app_id: appId, bytes: 0 })
    .onConflict((oc) => oc.column("app_id").doNothing())
    .execute();
}
