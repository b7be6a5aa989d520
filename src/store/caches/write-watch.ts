import type BetterSqlite3 from "better-sqlite3";
import { CommitSignal } from "./commit-signal.ts";

/**
 * Tells a SQLite store's readers whether a row a hot-path read depends on may have changed since
 * they read it: the stamp moves whenever this connection runs a statement that may change such a
 * row, or another connection (the CLI, a second store on the file) commits anything.
 *
 * Watched: every write of apps, users, secret_versions, token_epoch, tokens and webhooks (what an
 * op call's app read and a webhook delivery's read join), except
 * - a plain insert into apps, users, tokens or webhooks: a new row nobody has read (a token's
 *   insert leaves the token epoch alone, migration 022);
 * - an update that sets only columns no such read uses (a token's `last_used_at`, a webhook's
 *   last outcome): several a second on a busy service, each would otherwise empty every cache.
 * Not watched: app_storage_usage (every KV write touches it; nothing on a sole writer's op path
 * reads it), and every table no hot-path read joins. A write this cannot place (DDL, a CTE, a
 * schema-qualified name, raw SQL of another shape) moves the stamp: unknown is always safe.
 *
 * Other connections' commits are read from `PRAGMA data_version`, asked only when the wal-index
 * header shows a commit by anyone since the last look (CommitSignal): on a busy machine the
 * pragma's read transaction cost an op call more wall time than any other statement it ran.
 */
export class WriteWatch {
  private local = 0;
  private readonly dataVersion: BetterSqlite3.Statement<[], number>;
  private readonly commits: CommitSignal | null;
  /** `PRAGMA data_version` as last read. */
  private others: number;

  constructor(sqlite: BetterSqlite3.Database) {
    // `PRAGMA data_version` changes when another connection commits, never for this one's own.
    this.dataVersion = sqlite.prepare<[], number>("pragma data_version").pluck();
    // A read maps the wal-index (creating its file on a new database) before it is opened here.
    this.others = this.dataVersion.get() ?? 0;
    this.commits = sqlite.memory ? null : CommitSignal.open(`${sqlite.name}-shm`);
  }

  /** Lets go of the wal-index file (the store is closing). */
  close(): void {
    this.commits?.close();
  }

  /** Whether running `sql` (prepared, not read-only) may change a watched row. */
  static moves(sql: string): boolean {
    const target = WRITE.exec(sql)?.groups;
    if (target === undefined) return !CONTENT_NEUTRAL.test(sql);
    const table = target.table ?? "";
    if (!WATCHED.has(table)) return false;
    if (target.insert !== undefined) return !(NEW_ROWS_ONLY.has(table) && !/\bon\s+conflict\b/i.test(sql));
    return target.update === undefined || !setsOnly(sql, UNREAD_COLUMNS[table] ?? []);
  }

  /** Called before a watched statement runs (moving early is safe: a throw then moved nothing). */
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
      // No commit anywhere since the last look: the data version cannot have moved either.
      if (this.commits?.unchanged() !== true) {
        this.others = this.dataVersion.get() ?? 0;
        this.commits?.settle();
      }
      return `${this.local}:${this.others}`;
    } catch {
      return null;
    }
  }
}

const WATCHED = new Set(["apps", "users", "secret_versions", "token_epoch", "tokens", "webhooks"]);
const NEW_ROWS_ONLY = new Set(["apps", "users", "tokens", "webhooks"]);
const UNREAD_COLUMNS: Record<string, readonly string[]> = {
  tokens: ["last_used_at"],
  webhooks: ["last_run_at", "last_outcome", "last_error", "consecutive_failures"],
};
// The statements Kysely writes (`insert into "t"`, `update "t"`, `delete from "t"`), and raw ones
// alike; a schema-qualified or otherwise unusual target does not match, and so moves the stamp.
const WRITE =
  /^\s*(?:(?<insert>insert|replace)(?:\s+or\s+\w+)?\s+into|(?<update>update)(?:\s+or\s+\w+)?|delete\s+from)\s+"?(?<table>[A-Za-z_][A-Za-z0-9_]*)"?[\s(]/i;
// Statements that change no table's content: transaction control and pragmas (LaggingCommit
// switches `synchronous` for every delivery batch; a checkpoint copies pages, not rows).
const CONTENT_NEUTRAL = /^\s*(begin|commit|end|rollback|savepoint|release|pragma|analyze|vacuum)\b/i;
// Kysely's update: `update "t" set "a" = …, "b" = … where …`, every assigned column quoted.
const KYSELY_UPDATE = /^update "[A-Za-z0-9_]+" set (?<assignments>.*) where /s;

/**
 * Whether a Kysely-shaped update assigns nothing but `columns`: its set clause, split at the
 * commas outside parentheses and string literals, must be all `"name" = …` with each name listed.
 * Anything else (an unquoted name, a shape this does not know) is "no".
 */
function setsOnly(sql: string, columns: readonly string[]): boolean {
  const assignments = KYSELY_UPDATE.exec(sql)?.groups?.assignments;
  if (assignments === undefined) return false;
  return topLevelParts(assignments).every((part) => {
    const name = /^\s*"([A-Za-z0-9_]+)" = /.exec(part)?.[1];
    return name !== undefined && columns.includes(name);
  });
}

function topLevelParts(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") quoted = !quoted;
    else if (quoted) continue;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}
