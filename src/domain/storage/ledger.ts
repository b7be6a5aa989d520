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

/**
 * What this instance knows of each app's bytes used, and the room held by leases. Only a sole
 * writer (the SQLite store) keeps usage here: each write's check, which runs under the store's
 * single write transaction, records the total it leaves, so a lease is granted against the same
 * order of events the checks see. Elsewhere usage stays unknown and no lease is granted.
 */
export class UsageLedger {
  private readonly known = new Map<string, number>();
  private readonly held = new Map<string, number>();
  private readonly loading = new Set<string>();

  constructor(
    private readonly soleWriter: boolean,
    private readonly load: (appId: string) => Promise<number>,
  ) {}

  /** Up to `max` bytes of the app's room, or null when there is none or usage is not known yet. */
  lease(appId: string, max: number): WriteLease | null {
    if (!this.soleWriter) return null;
    const used = this.known.get(appId);
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

  /** A write passed its check: the app now uses `used` bytes; `size` of them came out of `lease`. */
  settle(appId: string, used: number, lease: WriteLease | null, size: number): void {
    if (!this.soleWriter) return;
    if (this.known.size >= MAX_KNOWN_APPS && !this.known.has(appId)) this.known.clear();
    this.known.set(appId, used);
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

  private take(appId: string, bytes: number): void {
    const left = (this.held.get(appId) ?? 0) - bytes;
    if (left > 0) this.held.set(appId, left);
    else this.held.delete(appId);
  }

  private learn(appId: string): void {
    if (this.loading.has(appId)) return;
    this.loading.add(appId);
    // The store runs one query at a time on SQLite, so this read lands between write
    // transactions; a check that ran meanwhile has recorded the newer total, which wins.
    this.load(appId)
      .then((used) => {
        if (!this.known.has(appId)) this.known.set(appId, used);
      })
      .catch(() => undefined)
      .finally(() => this.loading.delete(appId));
  }
}
