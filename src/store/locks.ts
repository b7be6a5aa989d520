import type { Transaction } from "kysely";
import type { Dialect } from "./dialect.ts";
import type { Database } from "./schema/index.ts";

/**
 * Makes sure an app's usage row exists and holds its lock until the transaction ends, then
 * returns the bytes used. PostgreSQL locks the row (`for update`); SQLite needs nothing more,
 * because Kysely runs SQLite on one connection and a transaction holds it until it commits.
 */
export async function lockUsageRow(trx: Transaction<Database>, dialect: Dialect, appId: string): Promise<number> {
  if (dialect === "sqlite") {
    const row = await trx.selectFrom("app_storage_usage").select("bytes").where("app_id", "=", appId).executeTakeFirst();
    if (row !== undefined) return Number(row.bytes);
  }
  await trx
    .insertInto("app_storage_usage")
    .values({ app_id: appId, bytes: 0 })
    .onConflict((oc) => oc.column("app_id").doNothing())
    .execute();
  let query = trx.selectFrom("app_storage_usage").select("bytes").where("app_id", "=", appId);
  if (dialect === "postgres") query = query.forUpdate();
  const row = await query.executeTakeFirstOrThrow();
  return Number(row.bytes);
}
