import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../../src/store/index.ts";
import { signal } from "./signal.ts";

/** How many sessions of `db`'s PostgreSQL database wait for a lock another holds (of `locktype` only, when given). */
export async function sessionsWaiting(db: Kysely<Database>, locktype?: "advisory"): Promise<number> {
  const waiting = await sql<{ n: number }>`
    select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
    where not l.granted and a.datname = current_database() ${locktype === undefined ? sql`` : sql`and l.locktype = ${locktype}`}`.execute(db);
  return waiting.rows[0]?.n ?? 0;
}

/**
 * Resolves once `sessions` sessions of `db`'s PostgreSQL database wait for a lock another holds: how
 * a test that plays transactions step by step knows one has reached the row another holds.
 */
export async function untilSomeoneWaitsOnALock(db: Kysely<Database>, sessions = 1): Promise<void> {
  while ((await sessionsWaiting(db)) < sessions) await new Promise((resolve) => setImmediate(resolve));
}

/** The most sessions of `db`'s database seen waiting for a lock of `locktype` at once, until `done` settles. */
export async function mostWaiting(db: Kysely<Database>, locktype: "advisory", done: Promise<unknown>): Promise<number> {
  let settled = false;
  void done.finally(() => (settled = true));
  let most = 0;
  while (!settled) most = Math.max(most, await sessionsWaiting(db, locktype));
  return most;
}

/** A transaction of the test's own on `db`: it does `work`, then stays open, its locks held, until `release()`. */
export function openTransaction(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<unknown>): { ready: Promise<void>; release: () => void; done: Promise<void> } {
  const [ready, released] = [signal(), signal()];
  const done = db.transaction().execute(async (trx) => {
    await work(trx);
    ready.fire();
    await released.wait;
  });
  return { ready: ready.wait, release: released.fire, done };
}
