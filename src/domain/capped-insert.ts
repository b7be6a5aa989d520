import { sql, type Kysely, type Transaction } from "kysely";
import type { ApiError } from "../errors/index.ts";
import { isUniqueViolation, type Database, type Dialect } from "../store/index.ts";
import { lockOwnerRow } from "../store/row-lock.ts";

type Trx = Transaction<Database>;

/** Tables of per-(app, op) rows that plan caps count; each has `id`, `app_id` and `op`. */
export type PerOpTable = "routines" | "webhooks";

export interface CappedInsert {
  table: PerOpTable;
  dialect: Dialect;
  appId: string;
  op: string;
  /** Whose plan caps apply: the app owner's. */
  ownerId: string;
  duplicate(existingId: string | null): ApiError;
  perApp: { max: number; refusal(): ApiError };
  perOwner: { max: number; refusal(): ApiError };
  insert(trx: Trx): Promise<void>;
}

/**
 * Inserts a per-(app, op) row that plan caps count (a routine, a webhook) under the owner's
 * lock, so concurrent creates can neither pass a cap nor add a duplicate; a duplicate that slips
 * in between instances is caught by the unique index and answered the same way.
 */
export async function insertWithinCaps(db: Kysely<Database>, c: CappedInsert): Promise<void> {
  try {
    await db.transaction().execute(async (trx) => {
      await lockOwnerRow(trx, c.dialect, c.ownerId);
      const existing = await sql<{ id: string }>`select id from ${sql.table(c.table)} where app_id = ${c.appId} and op = ${c.op}`.execute(trx);
      if (existing.rows[0] !== undefined) throw c.duplicate(existing.rows[0].id);
      const counts = await capCounts(trx, c.table, c.appId, c.ownerId);
      if (counts.app >= c.perApp.max) throw c.perApp.refusal();
      if (counts.owner >= c.perOwner.max) throw c.perOwner.refusal();
      await c.insert(trx);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw c.duplicate(null);
    throw error;
  }
}

/** The rows of `table` on one app, and on every app `ownerId` owns: what the plan caps count. Run under the owner's lock. */
export async function capCounts(trx: Trx, table: PerOpTable, appId: string, ownerId: string): Promise<{ app: number; owner: number }> {
  const count = async (where: ReturnType<typeof sql>) =>
    Number((await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)} t join apps a on a.id = t.app_id where ${where}`.execute(trx)).rows[0]?.n ?? 0);
  return { app: await count(sql`t.app_id = ${appId}`), owner: await count(sql`a.owner_user_id = ${ownerId}`) };
}
