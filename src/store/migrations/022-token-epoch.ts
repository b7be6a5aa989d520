import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * One counter that moves whenever a token stops being what it was: revoked, expired early,
 * re-bound, deleted (by hand or by a cascade). Triggers bump it, so no code path that changes a
 * token can forget to. An op call reads it with the app's row and trusts a token row it cached
 * under the same count (Tokens.authenticate): revocation stays immediate on every instance while
 * a call costs no token query of its own. Touching `last_used_at` and minting leave it alone.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("token_epoch")
    .addColumn("id", "integer", (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn("epoch", "bigint", (c) => c.notNull())
    .execute();
  await sql`insert into token_epoch (id, epoch) values (1, 0)`.execute(db);
  const watched = sql.raw("revoked_at, revoked_reason, expires_at, kind, hash, user_id, app_id");
  if (dialect === "postgres") {
    await sql`
      create function brickyard_token_epoch_bump() returns trigger language plpgsql as $$
      begin
        update token_epoch set epoch = epoch + 1 where id = 1;
        return null;
      end $$`.execute(db);
    // Per row, as SQLite's are: a statement that changes no token (a page view's rotation of a
    // visitor's older frame tokens finds none the first time) moves nothing.
    await sql`create trigger tokens_epoch_update after update of ${watched} on tokens for each row execute function brickyard_token_epoch_bump()`.execute(db);
    await sql`create trigger tokens_epoch_delete after delete on tokens for each row execute function brickyard_token_epoch_bump()`.execute(db);
    return;
  }
  await sql`create trigger tokens_epoch_update after update of ${watched} on tokens begin update token_epoch set epoch = epoch + 1 where id = 1; end`.execute(db);
  await sql`create trigger tokens_epoch_delete after delete on tokens begin update token_epoch set epoch = epoch + 1 where id = 1; end`.execute(db);
}
