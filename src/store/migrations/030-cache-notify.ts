import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * PostgreSQL: a change to any row an op call's or a delivery's cached read joins (apps, users,
 * secret_versions, token_epoch, tokens, webhooks) notifies `brickyard_cache` when its transaction
 * commits, whoever made it (any instance, the CLI, an operator's psql), so every instance can keep
 * those reads between changes (caches/pg-write-watch.ts). What WriteWatch ignores on SQLite is
 * ignored here too: a plain insert into apps, users, tokens or webhooks (a new row nobody has
 * read), and updates that change only columns no such read uses (a token's `last_used_at`, a
 * webhook's last outcome). An update that changes nothing notifies nothing. Notifications with
 * the same payload in one transaction arrive once. SQLite's stamp is kept by WriteWatch instead.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  await sql`
    create function brickyard_cache_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('brickyard_cache', tg_table_name);
      return null;
    end $$`.execute(db);
  const unread: Record<string, string[]> = {
    apps: [],
    users: [],
    secret_versions: [],
    token_epoch: [],
    tokens: ["last_used_at"],
    webhooks: ["last_run_at", "last_outcome", "last_error", "consecutive_failures"],
  };
  for (const [table, columns] of Object.entries(unread)) {
    const t = sql.raw(table);
    const changed =
      columns.length === 0
        ? sql.raw("old.* is distinct from new.*")
        : sql.raw(`(to_jsonb(old) - '{${columns.join(",")}}'::text[]) is distinct from (to_jsonb(new) - '{${columns.join(",")}}'::text[])`);
    await sql`create trigger ${sql.raw(`${table}_cache_update`)} after update on ${t} for each row when (${changed}) execute function brickyard_cache_notify()`.execute(db);
    await sql`create trigger ${sql.raw(`${table}_cache_delete`)} after delete on ${t} for each row execute function brickyard_cache_notify()`.execute(db);
    await sql`create trigger ${sql.raw(`${table}_cache_truncate`)} after truncate on ${t} for each statement execute function brickyard_cache_notify()`.execute(db);
  }
  // Rows whose mere arrival changes what a read finds: a new secrets version, the epoch's one row.
  for (const table of ["secret_versions", "token_epoch"]) {
    await sql`create trigger ${sql.raw(`${table}_cache_insert`)} after insert on ${sql.raw(table)} for each row execute function brickyard_cache_notify()`.execute(db);
  }
}
