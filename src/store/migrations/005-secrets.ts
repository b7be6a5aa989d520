import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("secrets")
    .addColumn("owner_user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("manifest_id", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("sealed", "text", (c) => c.notNull())
    .addColumn("size_bytes", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("secrets_pk", ["owner_user_id", "manifest_id", "name"])
    .execute();
}
