// Keeps remembered apps bounded; an app forgotten is treated as written elsewhere (one cache drop).
const MAX_APPS = 50_000;
// Own versions kept per app beyond the last one vouched for: writes that raced ahead of calls.
const MAX_OWN = 256;

/**
 * Whether an app's KV reads cached in this instance's workerd processes may still be used, on a
 * store other instances write too (PostgreSQL). Every committed write of an app's values bumps
 * its `data_version` (migration 020); an op call reads that version with the app's row. This
 * instance's own writes already reach its caches key by key (`onKvChange` → invalidations), so
 * only a version some other instance made means the app's whole cache must go.
 *
 * `vouched` is the version every cache here is known to reflect. A call that reads version `v`
 * may trust the caches iff each version in (vouched, v] was made by this instance's own commits;
 * otherwise they are dropped for that app before the call runs, and `v` is vouched for.
 */
export class DataVersions {
  private readonly vouched = new Map<string, number>();
  private readonly own = new Map<string, Set<number>>();
  /** This instance's writes of each app's values that have not answered yet. */
  private readonly writing = new Map<string, Set<Promise<unknown>>>();

  /**
   * Runs one of this instance's writes of `appId`'s values, which records its version
   * (`recordOwn`) before it resolves. While it runs, a call may already read the version it
   * made: `check` then waits for it rather than taking the version for another instance's.
   */
  async ownWrite<T>(appId: string, write: Promise<T>): Promise<T> {
    let pending = this.writing.get(appId);
    if (pending === undefined) this.writing.set(appId, (pending = new Set()));
    pending.add(write);
    try {
      return await write;
    } finally {
      pending.delete(write);
      if (pending.size === 0) this.writing.delete(appId);
    }
  }

  /**
   * `mustDrop`, unless the versions in question could all be this instance's own writes still in
   * flight: then it decides once those have answered (a write answers right after its commit),
   * instead of dropping caches its own writes already keep right. With more unexplained versions
   * than writes in flight, another instance wrote, and it decides at once.
   */
  check(appId: string, version: number): boolean | Promise<boolean> {
    const pending = this.writing.get(appId);
    if (pending === undefined) return this.mustDrop(appId, version);
    const unexplained = this.unexplained(appId, version, pending.size);
    if (unexplained === 0 || unexplained > pending.size) return this.mustDrop(appId, version);
    return Promise.allSettled([...pending]).then(() => this.mustDrop(appId, version));
  }

  /** Versions up to `version` neither vouched for nor recorded as own, counted up to `limit` + 1. */
  private unexplained(appId: string, version: number, limit: number): number {
    const vouched = this.vouched.get(appId);
    if (vouched === undefined) return Infinity;
    const own = this.own.get(appId);
    let count = 0;
    for (let v = vouched + 1; v <= version && count <= limit; v++) if (own?.has(v) !== true) count++;
    return count;
  }

  /** After a commit of this instance bumped `appId` to `version` (before its writer is answered). */
  recordOwn(appId: string, version: number): void {
    let versions = this.own.get(appId);
    if (versions === undefined) this.own.set(appId, (versions = new Set()));
    versions.add(version);
    if (versions.size > MAX_OWN) this.forget(appId);
  }

  /** True when the app's cached reads must be dropped before a call that read `version` runs. */
  mustDrop(appId: string, version: number): boolean {
    const vouched = this.vouched.get(appId);
    if (vouched === version) return false;
    const own = this.own.get(appId);
    let ours = vouched !== undefined && version > vouched;
    for (let v = (vouched ?? version) + 1; ours && v <= version; v++) ours = own?.has(v) === true;
    // Most recently used last, so the oldest is the first to go.
    this.vouched.delete(appId);
    this.vouched.set(appId, Math.max(version, vouched ?? version));
    if (own !== undefined) for (const v of own) if (v <= version) own.delete(v);
    if (this.vouched.size > MAX_APPS) this.forget(this.vouched.keys().next().value as string);
    // A call that read an older version than one vouched for started before a newer write's
    // commit was seen here: the caches it uses are newer, never older, than what it read.
    return !ours && !(vouched !== undefined && version < vouched);
  }

  private forget(appId: string): void {
    this.vouched.delete(appId);
    this.own.delete(appId);
  }
}
