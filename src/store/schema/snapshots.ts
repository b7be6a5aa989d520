/** A capture of an app's KV values and blobs at one moment (while the app was at `revision`). */
export interface AppSnapshotsTable {
  id: string;
  app_id: string;
  revision: number;
  keys: number;
  /** Sum of the captured values' sizes (what a restore writes back). */
  bytes: number;
  created_at: number;
}

/** One captured value: which store and key, and the content it had (by hash). */
export interface SnapshotEntriesTable {
  snapshot_id: string;
  store: "kv" | "blob";
  key: string;
  /** sha256 hex of the value's bytes (a KV value's JSON text as UTF-8). */
  hash: string;
  size: number;
  /** Blobs only. */
  content_type: string | null;
}

/** Captured content, once per hash across all snapshots. */
export interface SnapshotValuesTable {
  hash: string;
  /** Empty when the bytes are an object in the blob store (`object_hash`, migration 031). */
  data: Buffer;
  object_hash: string | null;
  size: number;
}
