import type { Transaction } from "kysely";
import type { Dialect } from "./dialect.ts";
import type { Database } from "./schema/index.ts";

/**
 * Serialises per-owner count checks (routine and webhook caps) until the transaction ends.
 * PostgreSQL locks the owner's row; SQLite needs nothing more, because Kysely runs SQLite on one
 * connection and a transaction holds it until it commits.
 */
export async function lockOwnerRow(trx: Transaction<Database>, dialect: Dialect, userId: string): Promise<void> {
  let query = trx.selectFrom("users").select("id").where("id", "=", userId);
  if (dialect === "postgres") query = query.forUpdate();
  await query.executeTakeFirst();
}
