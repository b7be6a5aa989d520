import type { ExecutorCall } from "./types.ts";

/**
 * Which build of its app an isolate holds: its revision's (ordered by revision, which only
 * grows), or one staged for a write not yet committed (ordered by the staging counter). Within
 * an app, only the newest of each kind can be called again. Equal orders (one revision, two
 * secrets versions) go by which was built here last: a secrets version can move either way (an
 * app moved to another owner takes that owner's).
 */
export interface IsolateOf {
  appId: string;
  kind: "revision" | "staged";
  order: readonly number[];
}

/** The build a call runs (or a warm-up builds). */
export function isolateOf(call: Pick<ExecutorCall, "appId" | "revision" | "staged">): IsolateOf {
  return call.staged === undefined
    ? { appId: call.appId, kind: "revision", order: [call.revision] }
    : { appId: call.appId, kind: "staged", order: [call.staged.seq] };
}

/**
 * Which isolates one workerd process holds, least recently used first. workerd never drops a
 * named loader isolate by itself (~1.5 MiB each), so the pool evicts past a count or when idle,
 * and once a newer build of the same app has run here (superseded) and the old one's calls are
 * answered: an app that writes a revision a second holds two isolates, not the last ten minutes'
 * worth, and its churn never pushes other apps' isolates out of the table (superseded ones go
 * first when it is full).
 */
export class IsolateTable {
  private readonly lastUsed = new Map<string, number>();
  private readonly inflight = new Map<string, number>();
  private readonly owners = new Map<string, IsolateOf>();
  private readonly byApp = new Map<string, Set<string>>();
  /** Keys whose app has a newer build here (a late call may still name one): evicted once idle. */
  private readonly superseded = new Set<string>();
  /** Counts the keys owned so far: the tiebreak of equal orders (see IsolateOf). */
  private owned = 0;
  /** Evictions under way; a call for that key waits for it so it never lands on a dying isolate. */
  readonly evicting = new Map<string, Promise<void>>();

  get size(): number {
    return this.lastUsed.size;
  }

  has(key: string): boolean {
    return this.lastUsed.has(key);
  }

  begin(key: string, now: number, of?: IsolateOf): void {
    this.lastUsed.delete(key);
    this.lastUsed.set(key, now);
    this.inflight.set(key, (this.inflight.get(key) ?? 0) + 1);
    if (of !== undefined && !this.owners.has(key)) this.own(key, of);
  }

  end(key: string): void {
    const left = (this.inflight.get(key) ?? 1) - 1;
    if (left <= 0) this.inflight.delete(key);
    else this.inflight.set(key, left);
  }

  /**
   * Keys to evict: superseded ones, then the idle ones by age, then the oldest past `capacity`;
   * never busy ones. As many as it takes to be within `capacity`, and otherwise at most `atMost`.
   */
  victims(capacity: number, idleBefore: number, atMost = Infinity): string[] {
    const out: string[] = [];
    const free = (key: string) => !this.inflight.has(key) && !this.evicting.has(key);
    // Isolates already on their way out make room too: counting them would evict one more each time.
    let leaving = 0;
    for (const key of this.evicting.keys()) if (this.lastUsed.has(key)) leaving += 1;
    const needed = this.lastUsed.size - leaving - capacity;
    const limit = Math.max(needed, atMost);
    for (const key of this.superseded) if (out.length < limit && free(key)) out.push(key);
    let over = needed - out.length;
    for (const [key, used] of this.lastUsed) {
      if (out.length >= limit) break;
      if (!free(key) || this.superseded.has(key)) continue;
      if (over > 0 || used < idleBefore) {
        out.push(key);
        over -= 1;
      } else break;
    }
    return out;
  }

  forget(key: string): void {
    this.lastUsed.delete(key);
    this.superseded.delete(key);
    const of = this.owners.get(key);
    if (of === undefined) return;
    this.owners.delete(key);
    const keys = this.byApp.get(of.appId);
    keys?.delete(key);
    if (keys?.size === 0) this.byApp.delete(of.appId);
  }

  /** Records whose build `key` holds; of the app's keys of its kind, all but the newest are superseded. */
  private own(key: string, of: IsolateOf): void {
    this.owners.set(key, { ...of, order: [...of.order, ++this.owned] });
    const keys = this.byApp.get(of.appId) ?? new Set<string>();
    this.byApp.set(of.appId, keys.add(key));
    const order = (k: string) => this.owners.get(k)?.order ?? [];
    const same = [...keys].filter((k) => this.owners.get(k)?.kind === of.kind);
    const newest = same.reduce((a, b) => (compare(order(b), order(a)) > 0 ? b : a));
    for (const k of same) if (k !== newest) this.superseded.add(k);
  }
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
