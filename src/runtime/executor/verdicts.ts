import type { Clock } from "../../config/clock.ts";

/** An app convicted this many times within the window is quarantined (one of them certain). */
export const CONVICTIONS_TO_QUARANTINE = 2;

interface Convictions {
  /** Clock times of its convictions within the window, and whether each was certain. */
  at: number[];
  sole: boolean[];
}

/**
 * Each app's convictions: faults the pool charged to it alone (blame.ts). A conviction puts the
 * app on parole: its calls run in a process of its own until its record clears, so it cannot
 * take another shared process down. A second conviction within the window quarantines it, at
 * once, whether or not it is called again, provided one of the two was certain (it was the only
 * app that could have run code there): an app only likely to blame is never quarantined on
 * likelihood alone, so an innocent caught beside an attacker loses at most its isolation.
 */
export class Verdicts {
  private readonly records = new Map<string, Convictions>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  /**
   * Records a conviction; true when the app is now to be quarantined: at its second (one of them
   * certain), or at once when it is certain and the app's code never answered a call (`untried`:
   * a new app that loops on its first call has no record to weigh against it).
   */
  convict(appId: string, sole: boolean, untried = false): boolean {
    const now = this.clock.now();
    const record = this.live(appId, now) ?? { at: [], sole: [] } satisfies Convictions;
    record.at.push(now);
    record.sole.push(sole);
    this.records.delete(appId);
    this.records.set(appId, record);
    if (this.records.size > MAX_RECORDS) this.records.delete(this.records.keys().next().value ?? appId);
    return (sole && untried) || (record.at.length >= CONVICTIONS_TO_QUARANTINE && record.sole.includes(true));
  }

  /** Whether the app has a conviction within the window: its calls run apart. */
  onParole(appId: string): boolean {
    return this.live(appId, this.clock.now()) !== undefined;
  }

  private live(appId: string, now: number): Convictions | undefined {
    const record = this.records.get(appId);
    if (record === undefined) return undefined;
    while (record.at.length > 0 && now - (record.at[0] ?? now) >= this.windowMs) {
      record.at.shift();
      record.sole.shift();
    }
    if (record.at.length > 0) return record;
    this.records.delete(appId);
    return undefined;
  }
}

const MAX_RECORDS = 100_000;
