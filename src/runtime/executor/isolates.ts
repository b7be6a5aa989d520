import type { ExecutorCall } from "./types.ts";

/**
 * Which build of its app an isolate holds: its revision's (ordered by revision, which only
 * grows), or one staged for a write not yet committed (ordered by the staging counter). Within
 * an app, only the newest of each kind can be called again. An equal order (one revision, two
 * secrets versions) goes to the one built here last: a secrets version can move either way (an
 * app moved to another owner takes that owner's).
 */
export interface BuildOf {
  appId: string;
  kind: "revision" | "staged";
  order: number;
}

/** The build a call runs (or a warm-up builds). */
export function buildOf(call: Pick<ExecutorCall, "appId" | "revision" | "staged">): BuildOf {
  return call.staged === undefined ? { appId: call.appId, kind: "revision", order: call.revision } : { appId: call.appId, kind: "staged", order: call.staged.seq };
}

/** The isolate of a revision's build with its secrets version (a staged build has a key of its own). */
export function isolateKey(call: Pick<ExecutorCall, "appId" | "revision" | "secretsVersion">): string {
  return `${call.appId}:${call.revision}:${call.secretsVersion}`;
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
  private readonly builds = new Map<string, BuildOf>();
  /** The newest key of each app and kind (`kind:appId`); every other key of theirs is superseded. */
  private readonly newest = new Map<string, string>();
  /** Keys whose app has a newer build here (a late call may still name one): evicted once idle. */
  private readonly superseded = new Set<string>();
  /** Evictions under way; a call for that key waits for it so it never lands on a dying isolate. */
  readonly evicting = new Map<string, Promise<void>>();

  get size(): number {
    return this.lastUsed.size;
  }

  has(key: string): boolean {
    return this.lastUsed.has(key);
  }

  begin(key: string, now: number, of?: BuildOf): void {
    this.lastUsed.delete(key);
    this.lastUsed.set(key, now);
    this.inflight.set(key, (this.inflight.get(key) ?? 0) + 1);
    if (of !== undefined && !this.builds.has(key)) this.own(key, of);
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

  /** `key` will not be called here again (its calls moved elsewhere): it goes first, once idle. */
  retire(key: string): void {
    if (this.lastUsed.has(key)) this.superseded.add(key);
  }

  forget(key: string): void {
    this.lastUsed.delete(key);
    this.superseded.delete(key);
    const of = this.builds.get(key);
    if (of === undefined) return;
    this.builds.delete(key);
    if (this.newest.get(lineOf(of)) === key) this.newest.delete(lineOf(of));
  }

  /** Records whose build `key` holds: the newer of it and its line's newest stays, the other is superseded. */
  private own(key: string, of: BuildOf): void {
    this.builds.set(key, of);
    const line = lineOf(of);
    const newest = this.newest.get(line);
    // A late call of an older build does not displace the newest; an equal order goes to the later.
    if (newest !== undefined && (this.builds.get(newest)?.order ?? 0) > of.order) {
      this.superseded.add(key);
      return;
    }
    if (newest !== undefined) this.superseded.add(newest);
    this.newest.set(line, key);
  }
}

/** An app's builds of one kind: only the newest of them can be called again. */
function lineOf(of: BuildOf): string {
  return `${of.kind}:${of.appId}`;
}
