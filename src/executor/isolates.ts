/**
 * Which isolates one workerd process holds, least recently used first. workerd never drops a
 * named loader isolate by itself (~1.5 MiB each), so the pool evicts past a count or when idle.
 */
export class IsolateTable {
  private readonly lastUsed = new Map<string, number>();
  private readonly inflight = new Map<string, number>();
  /** Evictions under way; a call for that key waits for it so it never lands on a dying isolate. */
  readonly evicting = new Map<string, Promise<void>>();

  get size(): number {
    return this.lastUsed.size;
  }

  has(key: string): boolean {
    return this.lastUsed.has(key);
  }

  begin(key: string, now: number): void {
    this.lastUsed.delete(key);
    this.lastUsed.set(key, now);
    this.inflight.set(key, (this.inflight.get(key) ?? 0) + 1);
  }

  end(key: string): void {
    const left = (this.inflight.get(key) ?? 1) - 1;
    if (left <= 0) this.inflight.delete(key);
    else this.inflight.set(key, left);
  }

  /** Keys to evict: the idle ones first by age, then the oldest past `capacity`; never busy ones. */
  victims(capacity: number, idleBefore: number): string[] {
    const out: string[] = [];
    let over = this.lastUsed.size - capacity;
    for (const [key, used] of this.lastUsed) {
      if (this.inflight.has(key) || this.evicting.has(key)) continue;
      if (over > 0 || used < idleBefore) {
        out.push(key);
        over -= 1;
      } else break;
    }
    return out;
  }

  forget(key: string): void {
    this.lastUsed.delete(key);
  }
}
