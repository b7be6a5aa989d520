import type { Kysely } from "kysely";

/**
 * OAuth 2.1 for MCP (DECISIONS §17): what the authorization server (oidc-provider) keeps, one row
 * per model instance: registered clients, interactions, codes, access and refresh tokens, grants.
 * The payload is the library's own JSON; the columns beside it are what we look rows up by
 * (grant, interaction uid, the person a grant is theirs), expire them by and show in /account.
 * No foreign key to users: a person's deletion revokes their grants through the store's code.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("oauth_records")
    .addColumn("model", "text", (c) => c.notNull())
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("payload", "text", (c) => c.notNull())
    .addColumn("grant_id", "text")
    .addColumn("uid", "text")
    .addColumn("account_id", "text")
    .addColumn("client_id", "text")
    .addColumn("expires_at", "bigint")
    .addColumn("consumed_at", "bigint")
    .addColumn("last_used_at", "bigint")
    .addColumn("label", "text")
    .addPrimaryKeyConstraint("oauth_records_pk", ["model", "id"])
    .execute();
  await db.schema.createIndex("oauth_records_grant").on("oauth_records").columns(["grant_id"]).execute();
  await db.schema.createIndex("oauth_records_uid").on("oauth_records").columns(["uid"]).execute();
  await db.schema.createIndex("oauth_records_account").on("oauth_records").columns(["account_id", "model"]).execute();
  await db.schema.createIndex("oauth_records_expires").on("oauth_records").columns(["expires_at"]).execute();
}
