import type { BlobStore } from "./blob-store.ts";

/**
 * Recently read values of write-once blob keys, bounded by bytes, least recently used first out.
 * Only for keys that are never written twice (asset bytes get a fresh key per upload): then a
 * cached value can never be stale on any instance, and no invalidation is needed. With the S3
 * store a read costs the server ~1.3 ms of CPU in the SDK before the first byte (measured by
 * `npm run bench:assets`); a repeated download of a small asset then costs a map lookup.
 */
export class BlobReadCache {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(
    private readonly store: BlobStore,
    /** Values larger than this are always read from the store. */
    private readonly maxValueBytes = 1024 * 1024,
    private readonly capacityBytes = 32 * 1024 * 1024,
  ) {}

  async get(key: string): Promise<Buffer | null> {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const data = await this.store.get(key);
    if (data !== null && data.length <= this.maxValueBytes && !this.entries.has(key)) {
      this.entries.set(key, data);
      this.bytes += data.length;
      for (const [oldest, value] of this.entries) {
        if (this.bytes <= this.capacityBytes) break;
        this.entries.delete(oldest);
        this.bytes -= value.length;
      }
    }
    return data;
  }

  /** Frees a key's bytes once it is deleted from the store (it is never written again). */
  forget(key: string): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    this.bytes -= value.length;
  }
}
