import type { ColumnType } from "kysely";

/** One KV entry of an app: a JSON value stored as text, as the app's binding serialized it. */
export interface AppKvTable {
  app_id: string;
  key: string;
  /** JSON text; `size` is its UTF-8 byte length. */
  value: string;
  size: number;
  updated_at: number;
}

/** One blob of an app (env.BLOB), bytes kept in the row so both dialects share one path. */
export interface AppBlobsTable {
  app_id: string;
  key: string;
  /** Empty when the bytes are an object in the blob store (`object_hash`, migration 031). */
  data: Buffer;
  object_hash: string | null;
  content_type: string;
  size: number;
  updated_at: number;
}

/**
 * Running byte total of what counts against an app's 100 MiB cap: its KV values and blobs, and
 * the distinct values its snapshots hold (DECISIONS §9, migration 037). Every write adjusts it in
 * the same transaction as the value, under this row's lock, so it stays exact and gates the cap;
 * taking and pruning snapshots adjust it the same way.
 */
export interface AppStorageUsageTable {
  app_id: string;
  bytes: number;
  /** PostgreSQL: bumped by every committed write of the app's values (migration 020). */
  data_version: ColumnType<number, number | undefined, number>;
  /** Its KV and blob keys, each counted as its length plus 64 (migration 033, KEYS_CAP_BYTES). */
  key_bytes: ColumnType<number, number | undefined, number>;
}
