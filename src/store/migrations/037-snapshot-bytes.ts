import { sql, type Kysely } from "kysely";

/**
 * DECISIONS §9: snapshots count against an app's storage cap. Only taking a snapshot had counted
 * them, against the app's live bytes: its writes then passed the cap by whatever its snapshots
 * held. An app's running total (`app_storage_usage.bytes`) now counts, beside its values, each
 * distinct value its snapshots refer to (runtime/storage/snapshot-held.ts); this adds what the
 * snapshots taken so far hold. Every app with snapshots has its row: it had values to capture,
 * and rows are kept since migration 034.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`update app_storage_usage set bytes = bytes + coalesce((
      select sum(held.size) from (
        select distinct v.hash, v.size from app_snapshots s
          join snapshot_entries e on e.snapshot_id = s.id
          join snapshot_values v on v.hash = e.hash
          where s.app_id = app_storage_usage.app_id
      ) held
    ), 0)`.execute(db);
}
