/** One uploaded asset of an app (DECISIONS §7); its bytes are in the blob store at `blob_key`. */
export interface AssetsTable {
  app_id: string;
  /** The app's own name for it, `^[a-zA-Z0-9][a-zA-Z0-9._/-]{0,199}$` without `..`. */
  key: string;
  /** Where the bytes are in the blob store; a fresh name per upload so a replace is atomic. */
  blob_key: string;
  content_type: string;
  size_bytes: number;
  created_at: number;
  updated_at: number;
}
