import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * PostgreSQL: the token epoch (migration 022) moves when a transaction commits, not when its
 * statement ends. Its one row is locked by the first bump and held to commit, so a transaction that
 * changed a token and then waited on any other row (an app's, a user's, another token's) held it
 * while whoever held that row waited for it to bump the epoch in turn: a deadlock, which
 * PostgreSQL broke a second later by failing one of them. Seen: a person's concurrent page loads,
 * and a frame load meeting the render-token sweep. Constraint triggers deferred to commit bump it
 * after every other lock is taken, so nobody waits while holding it. The count is the same, and
 * still moves with the change it counts, in the same commit. SQLite runs one writer at a time and
 * keeps its triggers.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  const watched = sql.raw("revoked_at, revoked_reason, expires_at, kind, hash, user_id, app_id");
  await sql`drop trigger tokens_epoch_update on tokens`.execute(db);
  await sql`drop trigger tokens_epoch_delete on tokens`.execute(db);
  await sql`create constraint trigger tokens_epoch_update after update of ${watched} on tokens deferrable initially deferred for each row execute function brickyard_token_epoch_bump()`.execute(db);
  await sql`create constraint trigger tokens_epoch_delete after delete on tokens deferrable initially deferred for each row execute function brickyard_token_epoch_bump()`.execute(db);
}
