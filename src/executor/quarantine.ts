import type { Clock } from "../config/clock.ts";

/**
 * Apps whose call took a process down (a hang or a crash). Their calls fail fast for a
 * cool-down, so one app cannot kill a process again and again while others share it.
 */
export class Quarantine {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly coolDownMs: number,
  ) {}

  add(appId: string): void {
    this.until.set(appId, this.clock.now() + this.coolDownMs);
  }

  /** Ms left in the app's cool-down, or 0. */
  remaining(appId: string): number {
    const until = this.until.get(appId);
    if (until === undefined) return 0;
    const left = until - this.clock.now();
    if (left <= 0) this.until.delete(appId);
    return Math.max(0, left);
  }
}
