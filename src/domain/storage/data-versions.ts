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
