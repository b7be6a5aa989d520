import { sql, type RawBuilder } from "kysely";
import type { Database } from "./schema/index.ts";

/** Tables whose rows name an app by `app_id`. */
type AppRowTable = { [T in keyof Database]: Database[T] extends { app_id: unknown } ? T : never }[keyof Database];

/**
 * A `where` condition true for the rows of `table` whose app no longer exists: what a sweep
 * takes when a deletion could not (a write after it, another instance's, a crash in between).
 */
export function appGone(table: AppRowTable): RawBuilder<boolean> {
  return sql<boolean>`not exists (select 1 from apps where apps.id = ${sql.ref(`${table}.app_id`)})`;
}
