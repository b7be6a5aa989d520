import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * One version per secrets scope (owner, manifest id), drawn at random on every write of the scope.
 * An op call reads it with the app's row (a join) instead of reading and hashing every sealed
 * secret of the scope. Random rather than a counter: an app moved to another owner's scope must
 * never meet a version its isolates already ran under.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("secret_versions")
    .addColumn("owner_user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("manifest_id", "text", (c) => c.notNull())
    .addColumn("version", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("secret_versions_pk", ["owner_user_id", "manifest_id"])
    .execute();
  // 48 bits, as SECRETS_VERSION_BITS: an exact integer in JavaScript.
  const random = dialect === "sqlite" ? sql`1 + abs(random() % 281474976710655)` : sql`1 + floor(random() * 281474976710655)::bigint`;
  await sql`insert into secret_versions (owner_user_id, manifest_id, version)
    select owner_user_id, manifest_id, ${random} from (select distinct owner_user_id, manifest_id from secrets) scopes`.execute(db);
}
