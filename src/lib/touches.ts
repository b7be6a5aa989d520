/**
 * When a "last used" column is due a write: at most once per key per `everyMs`, so a burst of
 * requests writes a row once. Remembers the newest `max` keys (the oldest is forgotten first;
 * a forgotten key is written again at its next use, which is harmless).
 */
export class Touches {
  private readonly last = new Map<string, number>();

  constructor(
    private readonly everyMs: number,
    private readonly max: number,
  ) {}

  /** True when `key` used at `now` is due a write (and counts it written); `stored`: what the row says. */
  due(key: string, now: number, stored: number | null = null): boolean {
    const last = Math.max(stored ?? -Infinity, this.last.get(key) ?? -Infinity);
    if (now - last < this.everyMs) return false;
    this.last.delete(key);
    this.last.set(key, now);
    if (this.last.size > this.max) this.last.delete(this.last.keys().next().value as string);
    return true;
  }
}
