import { sql, type Transaction } from "kysely";
import type { Dialect } from "./dialect.ts";
import type { Database } from "./schema/index.ts";

/** Rows whose lock serialises the checks made under it (a cap's count, a row that must still exist). */
export type LockableTable = "users" | "apps" | "teams" | "app_share_links";

/**
 * Holds the row `id` of `table` until the transaction ends, and says whether it exists: a count
 * checked against a cap, or a parent row read before a child is written, stays true until the
 * commit. PostgreSQL locks the row (`for update`: a concurrent delete waits, or has committed and
 * the row is gone); SQLite needs nothing more, because Kysely runs SQLite on one connection and a
 * transaction holds it until it commits.
 */
export async function lockRow(trx: Transaction<Database>, dialect: Dialect, table: LockableTable, id: string): Promise<boolean> {
  const lock = dialect === "postgres" ? sql` for update` : sql``;
  const { rows } = await sql<{ id: string }>`select id from ${sql.table(table)} where id = ${id}${lock}`.execute(trx);
  return rows.length > 0;
}

/** Serialises per-owner count checks (routine and webhook caps) until the transaction ends. */
export async function lockOwnerRow(trx: Transaction<Database>, dialect: Dialect, userId: string): Promise<void> {
  await lockRow(trx, dialect, "users", userId);
}
