import type { WriteWatch } from "./write-watch.ts";

// Past this many keys the oldest read is forgotten (a miss costs one query, as with no cache).
const MAX_KEYS = 10_000;

/**
 * Hot-path reads of a SQLite store, each kept while the store's WriteWatch stamp stands: any
 * write that may change a row they join, here or through another connection, moves the stamp
 * and the next read goes to the database. So a reader sees every committed change as it would
 * without the cache (a revoked token, a new revision, a plan, a rotated webhook secret), while
 * steady traffic skips the query. PostgreSQL has none: other instances write there.
 *
 * Values handed out are shared by the reads that hit, so they are frozen, all the way down.
 */
export class StampedCache<V> {
  private readonly entries = new Map<string, { stamp: string; value: V }>();

  constructor(private readonly watch: WriteWatch) {}

  /** The value under `key`, from `load` unless kept under the current stamp; kept if `keep` says so. */
  async read(key: string, load: () => Promise<V>, keep: (value: V) => boolean): Promise<V> {
    // Taken before the read: a write meanwhile moves it, so a value is never labelled newer than it is.
    const stamp = this.watch.stamp();
    const hit = this.entries.get(key);
    if (stamp !== null && hit?.stamp === stamp) return hit.value;
    const value = await load();
    if (stamp === null || !keep(value)) return value;
    deepFreeze(value);
    this.entries.delete(key);
    this.entries.set(key, { stamp, value });
    if (this.entries.size > MAX_KEYS) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    return value;
  }
}

function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const inner of Object.values(value)) deepFreeze(inner);
}
