import { sql, type Kysely } from "kysely";
import type { Database } from "../../src/store/index.ts";

/**
 * Resolves once `sessions` sessions of `db`'s PostgreSQL database wait for a lock another holds: how
 * a test that plays transactions step by step knows one has reached the row another holds.
 */
export async function untilSomeoneWaitsOnALock(db: Kysely<Database>, sessions = 1): Promise<void> {
  for (;;) {
    const waiting = await sql<{ n: number }>`
      select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where not l.granted and a.datname = current_database()`.execute(db);
    if ((waiting.rows[0]?.n ?? 0) >= sessions) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
