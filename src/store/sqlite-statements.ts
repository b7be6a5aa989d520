import type BetterSqlite3 from "better-sqlite3";
import type { SqliteDatabase, SqliteStatement } from "kysely";
import { WriteWatch } from "./caches/write-watch.ts";

// Kysely prepares every query afresh; on the write path that was about a sixth of a create's CPU.
// Statements are keyed by their SQL text, which Kysely produces with placeholders, so the set of
// distinct texts is small; the cap only guards against generated IN-lists of many lengths.
const CACHE_MAX = 500;

/**
 * The better-sqlite3 database as Kysely's SqliteDialect sees it, reusing prepared statements.
 * Safe because Kysely runs one query at a time on its single SQLite connection. A statement that
 * may change a row `watch` watches moves its stamp each time it runs.
 */
export function withStatementCache(sqlite: BetterSqlite3.Database, watch: WriteWatch): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SqliteStatement {
      const hit = cache.get(sql);
      if (hit !== undefined) return hit;
      const prepared = sqlite.prepare(sql);
      const statement = prepared.readonly || !WriteWatch.moves(sql) ? prepared : watched(prepared, watch);
      cache.set(sql, statement);
      if (cache.size > CACHE_MAX) {
        const oldest = cache.keys().next();
        if (oldest.done !== true) cache.delete(oldest.value);
      }
      return statement;
    },
  };
}

function watched(statement: BetterSqlite3.Statement, watch: WriteWatch): SqliteStatement {
  return {
    reader: statement.reader,
    all(parameters) {
      watch.touch();
      return statement.all(parameters);
    },
    run(parameters) {
      watch.touch();
      return statement.run(parameters);
    },
    iterate(parameters) {
      watch.touch();
      return statement.iterate(parameters);
    },
  };
}
