import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * Operators (DECISIONS §15): an account's role, suspension of accounts and apps, abuse reports
 * and the audit log. A user's suspension moves the token epoch (migration 022) as a token's
 * revocation does, so a token row an instance cached for op calls is read again, with the
 * suspension, on every instance's next call; on PostgreSQL at commit, as migration 025 says why.
 * Neither new table has a foreign key: an app or account deleted keeps its audit rows and reports.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable("users").addColumn("role", "text", (c) => c.notNull().defaultTo("member")).execute();
  await db.schema.alterTable("users").addColumn("suspended_at", "bigint").execute();
  await db.schema.alterTable("users").addColumn("suspended_reason", "text").execute();
  await db.schema.alterTable("apps").addColumn("suspended_at", "bigint").execute();
  await db.schema.alterTable("apps").addColumn("suspended_reason", "text").execute();

  await db.schema
    .createTable("abuse_reports")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.notNull())
    .addColumn("reason", "text", (c) => c.notNull())
    .addColumn("details", "text", (c) => c.notNull())
    .addColumn("reporter_ip", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("abuse_reports_created").on("abuse_reports").columns(["created_at"]).execute();

  await db.schema
    .createTable("audit_log")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("at", "bigint", (c) => c.notNull())
    .addColumn("actor_kind", "text", (c) => c.notNull())
    .addColumn("actor_id", "text")
    .addColumn("actor_handle", "text")
    .addColumn("action", "text", (c) => c.notNull())
    .addColumn("target_kind", "text", (c) => c.notNull())
    .addColumn("target_id", "text", (c) => c.notNull())
    .addColumn("ip", "text")
    .addColumn("detail", "text", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("audit_log_at").on("audit_log").columns(["at"]).execute();
  await db.schema.createIndex("audit_log_actor").on("audit_log").columns(["actor_id", "at"]).execute();
  await db.schema.createIndex("audit_log_target").on("audit_log").columns(["target_id", "at"]).execute();

  if (dialect === "postgres") {
    await sql`create constraint trigger users_suspension_epoch after update of suspended_at on users deferrable initially deferred for each row execute function brickyard_token_epoch_bump()`.execute(db);
    return;
  }
  await sql`create trigger users_suspension_epoch after update of suspended_at on users begin update token_epoch set epoch = epoch + 1 where id = 1; end`.execute(db);
}
