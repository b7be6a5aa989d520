import { HOUR } from "../config/clock.ts";
import type { Apps } from "../domain/apps/apps.ts";

export interface ReaperLog {
  info(fields: object, message: string): void;
}

/**
 * Removes unclaimed apps whose 7 days are over, with everything they own (spec: "unclaimed →
 * time → removed"). The scheduler runs `job` hourly (and at start) on one instance per period;
 * deleting is idempotent anyway.
 */
export class Reaper {
  constructor(
    private readonly apps: Apps,
    private readonly now: () => number,
    private readonly log: ReaperLog,
  ) {}

  /** The reaper as a scheduler job. */
  readonly job = {
    name: "apps.reaper",
    everyMs: HOUR,
    run: async (now: number): Promise<void> => {
      await this.reapOnce(now);
    },
  };

  /** One pass: removes every unclaimed app expired at `now` and returns how many went. */
  async reapOnce(now: number = this.now()): Promise<number> {
    let removed = 0;
    for (;;) {
      const ids = await this.apps.expiredUnclaimed(now);
      for (const id of ids) if (await this.apps.deleteById(id, now)) removed++;
      if (ids.length === 0) break;
    }
    if (removed > 0) this.log.info({ removed }, "reaped unclaimed apps past their 7 days");
    return removed;
  }
}
