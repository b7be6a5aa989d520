import { sql, type Kysely } from "kysely";

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The 50-invitations-a-day cap (DECISIONS §9) counted the inviter's share rows of the last day.
 * A revoke deletes its row, so invite-revoke-invite sent mail without end; and a grant made by
 * opening a share link names the link's maker as its inviter, so 50 people opening a link used
 * up the owner's invitations. Each invitation sent is now recorded here, and only here counted;
 * those of the last day are carried over.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("share_invitations_sent")
    .addColumn("inviter_user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("share_invitations_sent_inviter").on("share_invitations_sent").columns(["inviter_user_id", "created_at"]).execute();
  await sql`insert into share_invitations_sent (inviter_user_id, created_at)
    select invited_by, created_at from app_shares
    where link_id is null and created_at > ${Date.now() - DAY_MS} and invited_by in (select id from users)`.execute(db);
}
