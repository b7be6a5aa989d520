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
