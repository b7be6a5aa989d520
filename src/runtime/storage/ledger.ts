import { APP_CAP_BYTES } from "./limits.ts";

/**
 * Room in an app's cap held for one running op, so that writes it was told will fit do fit when
 * they commit (the executor's write-behind: see src/executor/README.md). `remaining` shrinks as
 * the op's writes commit; release() gives back what is left.
 */
export class WriteLease {
  released = false;

  constructor(
    readonly appId: string,
    public remaining: number,
    private readonly ledger: UsageLedger,
  ) {}

  release(): void {
    this.ledger.release(this);
  }
}

// Unknown is always safe (it only means no lease), so the map may be dropped when it grows.
const MAX_KNOWN_APPS = 50_000;

/** An app's bytes used, as of its data version (PostgreSQL; always 0 on a sole writer). */
export interface SeenUsage {
  used: number;
  version: number;
}

/**
 * What this instance knows of each app's bytes used, and the room held by leases.
 *
 * - A sole writer (the SQLite store): each write's check, which runs under the store's single
 *   write transaction, records the total it leaves, so a lease is granted against the same order
 *   of events the checks see, and a write is never refused for room its lease held.
 * - PostgreSQL: the usage an op call read as it began (`SeenUsage`, a consistent pair from one
 *   row, AppStorage.seenUsage) or that this instance's own write answered, whichever has the
 *   newer data version.
 *   This instance's own writes leave its leases' room free (`heldBesides`, passed to the store's
 *   check as a lower cap), but another instance may fill the room meanwhile: that write then
 *   fails at the op's end rather than at its set() (src/executor/README.md, write-behind).
 */
export class UsageLedger {
  private readonly known = new Map<string, SeenUsage>();
  private readonly held = new Map<string, number>();
  private readonly loading = new Set<string>();

  constructor(
    private readonly soleWriter: boolean,
    private readonly load: (appId: string) => Promise<number>,
  ) {}

  /**
   * Up to `max` bytes of the app's room, or null when there is none or usage is not known yet.
   * `seen` is the usage the call read as it began; without it, PostgreSQL grants none.
   */
  lease(appId: string, max: number, seen?: SeenUsage): WriteLease | null {
    if (!this.soleWriter) {
      if (seen === undefined) return null;
      this.observe(appId, seen.used, seen.version);
    }
    const used = this.known.get(appId)?.used;
    if (used === undefined) {
      this.learn(appId);
      return null;
    }
    const bytes = Math.min(max, APP_CAP_BYTES - used - (this.held.get(appId) ?? 0));
    if (bytes <= 0) return null;
    this.held.set(appId, (this.held.get(appId) ?? 0) + bytes);
    return new WriteLease(appId, bytes, this);
  }

  /** Room other ops' leases hold: a write must leave it free. */
  heldBesides(appId: string, lease: WriteLease | null): number {
    const own = lease !== null && lease.appId === appId && !lease.released ? lease.remaining : 0;
    return (this.held.get(appId) ?? 0) - own;
  }

  /**
   * A write passed its check: the app now uses `used` bytes; `size` of them came out of `lease`.
   * `version` is the data version the write made (PostgreSQL; without it only the lease counts).
   */
  settle(appId: string, used: number, lease: WriteLease | null, size: number, version?: number): void {
    if (this.soleWriter) this.remember(appId, { used, version: 0 });
    else if (version !== undefined) this.observe(appId, used, version);
    if (lease === null || lease.appId !== appId || lease.released) return;
    const taken = Math.min(lease.remaining, size);
    lease.remaining -= taken;
    this.take(appId, taken);
  }

  /** A write rolled back, or the app was dropped: learn its usage again before the next lease. */
  forget(appId: string): void {
    this.known.delete(appId);
  }

  release(lease: WriteLease): void {
    if (lease.released) return;
    lease.released = true;
    this.take(lease.appId, lease.remaining);
    lease.remaining = 0;
  }

  /** PostgreSQL: keeps the usage of the newest data version seen. */
  private observe(appId: string, used: number, version: number): void {
    const had = this.known.get(appId);
    if (had === undefined || had.version < version) this.remember(appId, { used, version });
  }

  private remember(appId: string, usage: SeenUsage): void {
    if (this.known.size >= MAX_KNOWN_APPS && !this.known.has(appId)) this.known.clear();
    this.known.set(appId, usage);
  }

  private take(appId: string, bytes: number): void {
    const left = (this.held.get(appId) ?? 0) - bytes;
    if (left > 0) this.held.set(appId, left);
    else this.held.delete(appId);
  }

  /** Sole writer only: PostgreSQL learns usage from each call's app row instead. */
  private learn(appId: string): void {
    if (!this.soleWriter || this.loading.has(appId)) return;
    this.loading.add(appId);
    // The store runs one query at a time on SQLite, so this read lands between write
    // transactions; a check that ran meanwhile has recorded the newer total, which wins.
    this.load(appId)
      .then((used) => {
        if (!this.known.has(appId)) this.known.set(appId, { used, version: 0 });
      })
      .catch(() => undefined)
      .finally(() => this.loading.delete(appId));
  }
}
