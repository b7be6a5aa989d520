/** An object in the blob store named by the sha256 of its bytes (migration 031, blobs/objects.ts). */
export interface BlobObjectsTable {
  hash: string;
  size: number;
  /** Last time a writer was about to refer to it: the sweep leaves it alone a while from then (OBJECT_GRACE_MS). */
  touched_at: number;
}
