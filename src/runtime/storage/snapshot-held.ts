import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Database } from "../../store/index.ts";

/**
 * What an app's snapshots add to its storage (DECISIONS §9: snapshots count against the cap):
 * each distinct value they refer to, once, as rows `(app_id, hash, size)`. Values are shared by
 * content across apps, but each app counts every value its own snapshots hold, so its count moves
 * only with its own snapshots, never when another app's are pruned. `only`: one app's.
 */
export function snapshotHeld(only?: string): RawBuilder<{ app_id: string; hash: string; size: number }> {
  const where = only === undefined ? sql`` : sql`where s.app_id = ${only}`;
  return sql`select distinct s.app_id, v.hash, v.size from app_snapshots s
    join snapshot_entries e on e.snapshot_id = s.id
    join snapshot_values v on v.hash = e.hash ${where}`;
}

/** The bytes the app's snapshots hold (`snapshotHeld`), as the caller's transaction sees them. */
export async function snapshotBytes(db: Kysely<Database>, appId: string): Promise<number> {
  const [row] = (await sql<{ bytes: unknown }>`select coalesce(sum(size), 0) as bytes from (${snapshotHeld(appId)}) held`.execute(db)).rows;
  return Number(row?.bytes ?? 0);
}
