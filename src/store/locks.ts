import { sql, type Kysely, type Transaction } from "kysely";
import type { Dialect } from "./dialect.ts";
import type { Database } from "./schema/index.ts";

/**
 * Holds the usage rows of the apps a write transaction touches until it ends, creating the
 * missing ones at 0 bytes. PostgreSQL locks them (`for update`) in app-id order, one order for
 * every instance, so two transactions queue instead of deadlocking. SQLite needs nothing:
 * Kysely runs it on one connection and a transaction holds that until it commits; an app's
 * first write there creates its row through `ensureUsageRow`.
 */
export async function lockUsageRows(trx: Kysely<Database>, dialect: Dialect, appIds: readonly string[]): Promise<void> {
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

/**
 * Locks the usage rows of the apps a write batch touches (as `lockUsageRows`) and bumps each
 * one's data version (migration 020), returning the new versions. SQLite, the only writer of its
 * data, keeps no versions. A batch of one app (the usual case) does it all in one statement: the
 * upsert creates or locks the row and bumps it; several apps are locked in order first, so the
 * bump takes no lock of its own.
 */
export async function lockForWrite(trx: Transaction<Database>, dialect: Dialect, appIds: readonly string[]): Promise<{ appId: string; version: number }[]> {
  if (dialect === "sqlite" || appIds.length === 0) return [];
  const [only] = appIds;
  if (appIds.length === 1 && only !== undefined) return [{ appId: only, version: await bumpUsageRow(trx, only) }];
  await lockUsageRows(trx, dialect, appIds);
  const rows = await trx
    .updateTable("app_storage_usage")
    .set({ data_version: sql<number>`data_version + 1` })
    .where("app_id", "in", [...appIds])
    .returning(["app_id", "data_version"])
    .execute();
  return rows.map((row) => ({ appId: row.app_id, version: Number(row.data_version) }));
}

/**
 * Creates or locks an app's usage row and bumps its data version (migration 020), setting its
 * bytes and its keys' cost when given (a snapshot restore's totals; a new row starts at 0). Returns the new version.
 */
export async function bumpUsageRow(trx: Kysely<Database>, appId: string, totals?: { bytes: number; keyBytes: number }): Promise<number> {
  const set = totals === undefined ? {} : { bytes: totals.bytes, key_bytes: totals.keyBytes };
  const row = await trx
    .insertInto("app_storage_usage")
    .values({ app_id: appId, bytes: 0, data_version: 1, ...set })
    .onConflict((oc) => oc.column("app_id").doUpdateSet({ data_version: sql<number>`app_storage_usage.data_version + 1`, ...set }))
    .returning("data_version")
    .executeTakeFirstOrThrow();
  return Number(row.data_version);
}

/**
 * Serialises the transactions that name the same `key` until each ends. PostgreSQL takes a
 * transaction-scoped advisory lock on the key's 64-bit hash (two keys that share a hash only wait
 * for each other); SQLite needs nothing, its one connection already runs writes one at a time.
 * Take it first in the transaction, before any row lock, so no cycle can form through it.
 */
export async function lockKey(trx: Kysely<Database>, dialect: Dialect, key: string, mode: "exclusive" | "shared" = "exclusive"): Promise<void> {
  if (dialect === "sqlite") return;
  // Shared holders of a key run side by side; an exclusive one waits for them all, and they for it.
  if (mode === "shared") await sql`select pg_advisory_xact_lock_shared(hashtextextended(${key}, 0))`.execute(trx);
  else await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
}
