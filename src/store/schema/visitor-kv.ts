/** A visitor's own KV value on an app's custom domain (migration 029). */
export interface VisitorKvTable {
  app_id: string;
  /** The visitor's first-party cookie's id (random, 128 bits). */
  visitor_id: string;
  key: string;
  value: string;
  size: number;
  updated_at: number;
}

/** One visitor's store as a whole: what it holds and when it was last written (migration 032). */
export interface VisitorStoresTable {
  app_id: string;
  visitor_id: string;
  bytes: number;
  /** Its keys, each counted as its length plus 64 (KEYS_CAP_BYTES). */
  key_bytes: number;
  /** The store's last write: the sweep removes a store idle for a year. */
  updated_at: number;
}

/** All of an app's visitors' stores together (migration 032). */
export interface VisitorTotalsTable {
  app_id: string;
  bytes: number;
  key_bytes: number;
}
