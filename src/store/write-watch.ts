import type BetterSqlite3 from "better-sqlite3";

/**
 * Tells a SQLite store's readers whether anything an op call's app read depends on may have
 * changed since they last read it: the stamp moves whenever this connection runs a statement that
 * may change such a row, or another connection (the CLI, a second store on the file) commits.
 *
 * Watched: updates and deletes of apps and users (an insert changes no row a reader holds),
 * every write of secret_versions and token_epoch, and updates and deletes of tokens (triggers
 * move the token epoch then, migration 022). Not watched: app_storage_usage, which every KV
 * write touches and which nothing on a sole writer's op path reads (PostgreSQL reads it per
 * call and has no such cache). A write statement this cannot place (DDL, a CTE, raw SQL of a
 * shape not below) moves the stamp too: unknown is always safe.
 */
export class WriteWatch {
  private local = 0;
  private readonly dataVersion: BetterSqlite3.Statement<[], number>;

  constructor(sqlite: BetterSqlite3.Database) {
    // `PRAGMA data_version` changes when another connection commits, never for this one's own.
    this.dataVersion = sqlite.prepare<[], number>("pragma data_version").pluck();
  }

  /** Whether running `sql` (prepared, not read-only) may change a watched row. */
  static moves(sql: string): boolean {
    if (TOUCH.test(sql)) return false;
    const target = WRITE.exec(sql)?.groups;
    if (target === undefined) return !CONTENT_NEUTRAL.test(sql);
    const table = target.table ?? "";
    if (!WATCHED.has(table)) return false;
    return !(target.insert !== undefined && INSERT_ONLY.has(table) && !/\bon\s+conflict\b/i.test(sql));
  }

  /** Called before a watched statement runs (bumping early is safe; a throw still moved nothing). */
  touch(): void {
    this.local++;
  }

  /**
   * A value that differs from every earlier one once a watched row may have changed; null when it
   * cannot be read now (a statement iterating on the connection), which a reader treats as a miss.
   * Take it before reading: a write after that moves it, so a read is never labelled newer than it is.
   */
  stamp(): string | null {
    try {
      return `${this.local}:${this.dataVersion.get() ?? 0}`;
    } catch {
      return null;
    }
  }
}

const WATCHED = new Set(["apps", "users", "secret_versions", "token_epoch", "tokens"]);
// Tables where a plain insert adds a row no reader held (a new app or user; a token's insert
// leaves the epoch alone). An upsert may change an existing row, so it moves the stamp.
const INSERT_ONLY = new Set(["apps", "users", "tokens"]);
// The statements Kysely writes (`insert into "t"`, `update "t"`, `delete from "t"`), and raw ones
// alike; a schema-qualified or otherwise unusual target does not match, and so moves the stamp.
const WRITE = /^\s*(?:(?<insert>insert|replace)(?:\s+or\s+\w+)?\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+"?(?<table>[A-Za-z_][A-Za-z0-9_]*)"?[\s(]/i;
// A token's first use in a minute records it (Tokens.authenticate); no trigger watches that column,
// and with many tokens in use it would otherwise move the stamp several times a second.
const TOUCH = /^update "tokens" set "last_used_at" = \? where "id" = \?$/;
// Statements that change no table's content: transaction control and pragmas (LaggingCommit
// switches `synchronous` for every delivery batch; a checkpoint copies pages, not rows).
const CONTENT_NEUTRAL = /^\s*(begin|commit|end|rollback|savepoint|release|pragma|analyze|vacuum)\b/i;
