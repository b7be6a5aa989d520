
// Past this many (estimated) bytes the oldest reads are forgotten; a miss costs one query, as
// with no cache. A manifest may be a good part of a 256 KiB module: a count alone would let
// 10,000 such apps, each called once, hold gigabytes.
const MAX_BYTES = 32 * 1024 * 1024;

/**
 * What a cache is kept under: a value that differs from every earlier one once a row its reads
 * join may have changed, or null when that cannot be told now (then nothing is kept or trusted).
 * Taken before a read, so a value is never labelled newer than it is.
 */
export interface ReadStamp {
  stamp(): string | null;
}

/**
 * Hot-path reads, each kept while the store's stamp stands (WriteWatch on SQLite, PgWriteWatch on
 * PostgreSQL): any write that may change a row they join, here or through another connection or
 * instance, moves the stamp and the next read goes to the database. So a reader sees every
 * committed change as it would without the cache (a revoked token, a new revision, a plan, a
 * rotated webhook secret), on PostgreSQL within PgWriteWatch's bound for another instance's,
 * while steady traffic skips the query.
 *
 * Values handed out are shared by the reads that hit, so they are frozen, all the way down.
 */
export class StampedCache<V> {
  private readonly entries = new Map<string, { stamp: string; value: V; bytes: number }>();
  private bytes = 0;

  constructor(private readonly watch: ReadStamp) {}

  /** What it holds: values, and their weight in bytes (at most 32 MiB). */
  footprint(): { values: number; bytes: number } {
    return { values: this.entries.size, bytes: this.bytes };
  }

  /**
   * The value under `key`, from `load` unless kept under the current stamp. `weigh` tells what a
   * loaded value costs to keep, in bytes, or null not to keep it.
   */
  async read(key: string, load: () => Promise<V>, weigh: (value: V) => number | null): Promise<V> {
    // Taken before the read: a write meanwhile moves it, so a value is never labelled newer than it is.
    const stamp = this.watch.stamp();
    const hit = this.entries.get(key);
    if (stamp !== null && hit?.stamp === stamp) return hit.value;
    const value = await load();
    const bytes = stamp === null ? null : weigh(value);
    if (stamp === null || bytes === null || bytes > MAX_BYTES / 16) return value;
    deepFreeze(value);
    this.forget(key);
    this.entries.set(key, { stamp, value, bytes });
    this.bytes += bytes;
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= MAX_BYTES) break;
      this.forget(oldest);
    }
    return value;
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}

/** Freezes `value` and everything it holds: a value shared by several readers can be changed by none. */
export function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const inner of Object.values(value)) deepFreeze(inner);
}
