import type pg from "pg";
import { PgWriteWatch } from "./caches/pg-write-watch.ts";

// Kysely sends every query unnamed, so PostgreSQL parses and plans it on each run; for the
// per-call reads and the KV write's statements that was more of the machine's CPU than the
// queries' own work. A text seen twice gets a name, and the driver prepares it once per
// connection. Capped: generated IN-lists of many lengths would otherwise name without end.
const NAMED_MAX = 500;
// Texts seen once, waiting for a second sighting: forgotten wholesale past this many.
const SEEN_MAX = 10_000;
// "cached plan must not change result type": a prepared `select *` after another instance's
// migration changed the table. That text goes back to unnamed (and the run is retried).
const PLAN_CHANGED = "0A000";

type Query = (...args: unknown[]) => unknown;

/**
 * The pg pool as Kysely's PostgresDialect sees it: with `prepare`, naming repeated statements
 * (see above; off for connection poolers that hand one session's statements to another server
 * connection, PgBouncer in transaction mode before 1.21: `DATABASE_PREPARE=off`); with `watch`,
 * moving its stamp around every statement that may change a row the read caches join, before it
 * runs and again once it, or the transaction it ran in, is over (PgWriteWatch).
 */
export function withStatementHooks(pool: pg.Pool, options: { prepare: boolean; watch: PgWriteWatch | null }): pg.Pool {
  const { watch } = options;
  const seen = new Map<string, number>();
  const names = new Map<string, string | null>();
  const patched = new WeakSet<pg.PoolClient>();
  const nameOf = (text: string): string | null => {
    if (!options.prepare) return null;
    const known = names.get(text);
    if (known !== undefined) return known;
    const count = (seen.get(text) ?? 0) + 1;
    if (count < 2 || names.size >= NAMED_MAX) {
      if (names.size < NAMED_MAX) {
        if (seen.size >= SEEN_MAX) seen.clear();
        seen.set(text, count);
      }
      return null;
    }
    seen.delete(text);
    const name = `brickyard_${names.size}`;
    names.set(text, name);
    return name;
  };
  const patch = (client: pg.PoolClient): pg.PoolClient => {
    if (patched.has(client)) return client;
    patched.add(client);
    const query = client.query.bind(client) as Query;
    // Kysely opens and ends transactions with plain statements on the same client.
    let inTransaction = false;
    // A statement of the open transaction moved the stamp: it moves again when that ends.
    let movedInTransaction = false;
    const run: Query = (text, values) => {
      const name = typeof text === "string" && Array.isArray(values) && values.length > 0 ? nameOf(text) : null;
      if (name === null) return values === undefined ? query(text) : query(text, values);
      return (query({ name, text, values }) as Promise<unknown>).catch((error: unknown) => {
        if ((error as { code?: unknown }).code !== PLAN_CHANGED) throw error;
        names.set(text as string, null);
        // Outside a transaction the failed run changed nothing: run it again, unnamed. Inside
        // one, the transaction is aborted already; its caller sees the error.
        if (inTransaction) throw error;
        return query(text, values);
      });
    };
    const hooked: Query = (text, values, ...rest) => {
      // A callback (pg's own callers) goes to the driver as given; nothing here uses one.
      if (typeof values === "function" || rest.length > 0) {
        if (watch !== null && typeof text === "string" && PgWriteWatch.moves(text)) watch.touch();
        return query(text, values, ...rest);
      }
      if (typeof text !== "string") return run(text, values);
      if (/^(begin|start transaction)\b/i.test(text)) inTransaction = true;
      // `rollback to savepoint` ends no transaction.
      const ends = /^(commit|rollback)\b(?!\s+to\b)/i.test(text);
      if (ends) inTransaction = false;
      let after = false;
      if (watch !== null && PgWriteWatch.moves(text)) {
        watch.touch();
        if (inTransaction) movedInTransaction = true;
        else after = true;
      }
      if (ends && movedInTransaction) {
        movedInTransaction = false;
        after = true;
      }
      const result = run(text, values);
      if (!after || watch === null) return result;
      return (result as Promise<unknown>).finally(() => watch.touch());
    };
    (client as unknown as { query: Query }).query = hooked;
    return client;
  };
  return new Proxy(pool, {
    get(target, property, receiver) {
      if (property === "connect") return async () => patch(await target.connect());
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === "function" ? (value as Query).bind(target) : value;
    },
  });
}
