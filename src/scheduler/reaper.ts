import { HOUR } from "../config/clock.ts";
import type { Apps } from "../domain/apps/apps.ts";

export interface ReaperLog {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/**
 * Removes unclaimed apps whose 7 days are over, with everything they own (spec: "unclaimed →
 * time → removed"). Runs once at start and then hourly. Deleting is idempotent, so several
 * instances sharing one database may all run it.
 */
export class Reaper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;

  constructor(
    private readonly apps: Apps,
    private readonly now: () => number,
    private readonly log: ReaperLog,
    private readonly intervalMs: number = HOUR,
  ) {}

  /**
   * The reaper as a periodic job `{name, everyMs, run(now)}`, the shape a shared scheduler takes,
   * so it can move onto one without changing what it does.
   */
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
      for (const id of ids) if (await this.apps.deleteById(id)) removed++;
      if (ids.length === 0) break;
    }
    if (removed > 0) this.log.info({ removed }, "reaped unclaimed apps past their 7 days");
    return removed;
  }

  start(): void {
    if (this.timer !== null) return;
    this.tick();
    // unref: a pending reap must not keep the process alive on its own.
    this.timer = setInterval(() => this.tick(), this.intervalMs).unref();
  }

  /** Stops the timer and waits for a pass in flight, so the store can close under it safely. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private tick(): void {
    if (this.running !== null) return;
    this.running = this.reapOnce()
      .catch((error: unknown) => {
        this.log.error({ err: error }, "reaper pass failed");
        return 0;
      })
      .finally(() => {
        this.running = null;
      });
  }
}
