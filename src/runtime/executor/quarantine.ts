import type { Clock } from "../../config/clock.ts";

/** Convictions of one account's apps within a cool-down that quarantine all of its apps. */
export const OWNER_STRIKES = 3;

/**
 * Apps whose code took a process down (a hang, a crash, a budget). Their calls fail fast for a
 * cool-down, so one app cannot kill a process again and again while others share it. An account
 * whose apps are convicted OWNER_STRIKES times within a cool-down has all its apps quarantined:
 * otherwise a signed-in attacker (whose creates are not metered) could make a new app for every
 * pair of faults.
 */
export class Quarantine {
  private readonly until = new Map<string, number>();
  private readonly ownerUntil = new Map<string, number>();
  private readonly strikes = new Map<string, number[]>();
  /** Who owns the apps that ran lately, learned at each call (pool.ts); bounded. */
  private readonly owners = new Map<string, string>();

  constructor(
    private readonly clock: Clock,
    private readonly coolDownMs: number,
  ) {}

  /** Notes whose app this is, so a conviction can count against its owner. */
  owner(appId: string, ownerId: string | null | undefined): void {
    if (ownerId === null || ownerId === undefined) return;
    this.owners.delete(appId);
    this.owners.set(appId, ownerId);
    if (this.owners.size > MAX_KNOWN_OWNERS) this.owners.delete(this.owners.keys().next().value ?? appId);
  }

  add(appId: string): void {
    const now = this.clock.now();
    this.until.set(appId, now + this.coolDownMs);
    const ownerId = this.owners.get(appId);
    if (ownerId === undefined) return;
    const recent = (this.strikes.get(ownerId) ?? []).filter((at) => now - at < this.coolDownMs);
    recent.push(now);
    this.strikes.set(ownerId, recent);
    if (recent.length >= OWNER_STRIKES) this.ownerUntil.set(ownerId, now + this.coolDownMs);
  }

  /** Ms left in the app's cool-down (or its owner's), and whose it is; 0 when none. */
  remaining(appId: string, ownerId: string | null = null): { ms: number; of: "app" | "owner" } {
    const app = this.left(this.until, appId);
    const owner = ownerId === null ? 0 : this.left(this.ownerUntil, ownerId);
    return owner > app ? { ms: owner, of: "owner" } : { ms: app, of: "app" };
  }

  private left(map: Map<string, number>, key: string): number {
    const until = map.get(key);
    if (until === undefined) return 0;
    const left = until - this.clock.now();
    if (left <= 0) map.delete(key);
    return Math.max(0, left);
  }
}

const MAX_KNOWN_OWNERS = 100_000;
