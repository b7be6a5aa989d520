import type { WriteWatch } from "../../store/index.ts";
import type { AppRecord } from "./queries.ts";

export interface AppWithTokenEpoch {
  app: AppRecord | null;
  tokenEpoch: number;
}

// Past this many apps the oldest read is forgotten (a miss costs one query, as without the cache).
const MAX_APPS = 10_000;

/**
 * An op call's one read (the app's row with its owner's plan and secrets version, and the token
 * epoch) kept on a SQLite store for as long as its WriteWatch stamp stands: any write that may
 * change such a row here, or any commit by another connection, moves the stamp, and the next
 * call reads again. So a revoked token, a new revision, a plan change or a new secret is seen by
 * the very next call, as without the cache; steady op calls skip a five-table join (~50 µs of
 * the control plane's CPU per call in `npm run bench`).
 *
 * Records handed out are shared by the calls that hit, so they are frozen, manifest and all.
 * Not used on PostgreSQL: other instances write there, and its per-call read is what tells.
 */
export class AppReadCache {
  private readonly entries = new Map<string, { stamp: string; read: AppWithTokenEpoch }>();

  constructor(private readonly watch: WriteWatch) {}

  async read(id: string, load: () => Promise<AppWithTokenEpoch>): Promise<AppWithTokenEpoch> {
    // Taken before the read: a write meanwhile moves it, so this read is never labelled newer than it is.
    const stamp = this.watch.stamp();
    const hit = this.entries.get(id);
    if (stamp !== null && hit?.stamp === stamp) return hit.read;
    const read = await load();
    // An absent app is not kept: its create is an insert, which moves no stamp.
    if (stamp === null || read.app === null) return read;
    const kept = { app: deepFreeze(read.app), tokenEpoch: read.tokenEpoch };
    this.entries.delete(id);
    this.entries.set(id, { stamp, read: kept });
    if (this.entries.size > MAX_APPS) this.forgetOldest();
    return kept;
  }

  private forgetOldest(): void {
    const oldest = this.entries.keys().next();
    if (oldest.done !== true) this.entries.delete(oldest.value);
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
