import { sql, type Kysely } from "kysely";
import type { Database } from "../../src/store/index.ts";

/**
 * Resolves once a session of `db`'s PostgreSQL database waits for a lock another holds: how a test
 * that plays two transactions step by step knows the second has reached the row the first holds.
 */
export async function untilSomeoneWaitsOnALock(db: Kysely<Database>): Promise<void> {
  for (;;) {
    const waiting = await sql<{ n: number }>`
      select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where not l.granted and a.datname = current_database()`.execute(db);
    if ((waiting.rows[0]?.n ?? 0) > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
