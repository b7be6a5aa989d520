import { sql, type Kysely } from "kysely";

/**
 * Secrets are kept per (owner, manifest id), the pair that names an app in its owner's account,
 * and are set only through a live app. An app's deletion left them (until `deleteAppRows` took
 * them with it): unlisted, out of the owner's reach, and read as its own by the next code under
 * that manifest id. Those left so far go now, with their scopes' version rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ["secrets", "secret_versions"]) {
    await sql`delete from ${sql.table(table)} where not exists (
      select 1 from apps where apps.owner_user_id = ${sql.ref(`${table}.owner_user_id`)} and apps.manifest_id = ${sql.ref(`${table}.manifest_id`)}
    )`.execute(db);
  }
}
