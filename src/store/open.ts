import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteAdapter, SqliteDialect, type DialectAdapter, type LogConfig } from "kysely";
import pg from "pg";
import type { Dialect } from "./dialect.ts";
import { migrationProvider } from "./migrations/index.ts";
import { withStatementHooks } from "./pg-statements.ts";
import { PgWriteWatch } from "./caches/pg-write-watch.ts";
import type { ReadStamp } from "./caches/stamped-cache.ts";
import { withStatementCache } from "./sqlite-statements.ts";
import { WriteWatch } from "./caches/write-watch.ts";
import type { Database } from "./schema/index.ts";

export interface Store {
  db: Kysely<Database>;
  dialect: Dialect;
  /**
   * Moves when a row a hot-path read (an op call's app, a delivery's webhook) joins may have
   * changed: WriteWatch on SQLite, PgWriteWatch on PostgreSQL (unless `watch: false`).
   */
  watch?: ReadStamp;
  /** PostgreSQL: the connection pool's counts now (metrics); SQLite has one connection and no pool. */
  pool?: () => { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface StoreOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** Kysely's query log: every statement with its parameters and duration. */
  log?: LogConfig;
  /** PostgreSQL: name repeated statements so they are prepared once per connection (default on). */
  prepare?: boolean;
  /**
   * PostgreSQL: keep a stamp for read caches, listening for other instances' changes on a
   * connection of its own (default on; a one-off command such as a backup needs none).
   */
  watch?: boolean;
}

const INT8_OID = 20;

function parseInt8AsNumber(oid: number, format?: "text" | "binary"): unknown {
  if (oid === INT8_OID) return (value: string) => Number(value);
  return format === "binary" ? pg.types.getTypeParser(oid, "binary") : pg.types.getTypeParser(oid, "text");
}

export function openStore(options: StoreOptions): Store {
  if (options.databaseUrl !== null) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 10,
      // Every bigint we store is an epoch millisecond or a byte count, far below 2^53.
      types: { getTypeParser: parseInt8AsNumber as typeof pg.types.getTypeParser },
    });
    // pg re-emits a dead idle connection's error (a server restart, a dropped test database) on
    // the pool, after discarding that client; with no listener the emit would crash the process.
    // The next query simply opens a new connection, so there is nothing more to do here.
    pool.on("error", () => undefined);
    const watch = options.watch === false ? null : new PgWriteWatch(options.databaseUrl);
    const hooked = withStatementHooks(pool, { prepare: options.prepare !== false, watch });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: hooked }), ...(options.log === undefined ? {} : { log: options.log }) });
    return {
      db,
      dialect: "postgres",
      ...(watch === null ? {} : { watch }),
      pool: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      close: async () => {
        await watch?.close();
        await db.destroy();
      },
    };
  }
  // A new data directory is this user's alone (an existing one keeps the mode its owner chose).
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const file = join(options.dataDir, "brickyard.db");
  ownerOnly(file);
  const sqlite = new SqliteDatabase(file);
  sqlite.pragma("journal_mode = WAL");
  // SQLite gives the WAL and shared-memory files the database file's mode when it creates them;
  // ones left by an older version keep theirs, so they are set here too.
  for (const extra of [`${file}-wal`, `${file}-shm`]) if (existsSync(extra)) chmodSync(extra, 0o600);
  sqlite.pragma("synchronous = FULL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  const watch = new WriteWatch(sqlite);
  const db = new Kysely<Database>({ dialect: new TransactionalDdlSqliteDialect({ database: withStatementCache(sqlite, watch) }), ...(options.log === undefined ? {} : { log: options.log }) });
  return {
    db,
    dialect: "sqlite",
    watch,
    close: async () => {
      await db.destroy();
      watch.close();
    },
  };
}

/**
 * SQLite runs DDL inside transactions, but Kysely's SQLite adapter says it cannot, so its migrator
 * ran each statement on its own: a migration that failed half way (a full disk, a crash) left its
 * first tables in place and itself unrecorded, and every later start failed on "already exists".
 * Saying so makes the migrator run all pending migrations in one transaction, as on PostgreSQL:
 * all of them or none. It is also one commit instead of one per statement (a new database's 117).
 * No migration may rely on what SQLite ignores inside a transaction (`PRAGMA foreign_keys`).
 */
class TransactionalDdlSqliteDialect extends SqliteDialect {
  override createAdapter(): DialectAdapter {
    return new (class extends SqliteAdapter {
      override get supportsTransactionalDdl(): boolean {
        return true;
      }
    })();
  }
}

/** Applies every pending migration; throws with the failing migration's name. */
export async function migrate(store: Store): Promise<void> {
  const migrator = new Migrator({ db: store.db, provider: migrationProvider(store.dialect) });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "unknown";
    throw new Error(`migration ${failed} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`, { cause: error });
  }
}

/** The database holds every app's data and sealed secrets: readable by this user only (0600). */
function ownerOnly(file: string): void {
  closeSync(openSync(file, "a", 0o600));
  chmodSync(file, 0o600);
}
