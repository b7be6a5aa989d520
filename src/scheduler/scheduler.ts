import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { Kysely } from "kysely";
import { SECOND, type Clock } from "../config/clock.ts";
import type { Database } from "../store/index.ts";
import { claimPeriod } from "./leases.ts";

export interface Job {
  /** Unique across the deployment: the lease row's key. */
  name: string;
  /** How often it runs, across all instances together. */
  everyMs: number;
  run(now: number): Promise<void>;
}

type Log = Pick<FastifyBaseLogger, "error" | "info">;

/**
 * Runs periodic jobs (the reaper, retention sweeps, routine ticks) on whichever instance claims
 * each period first. `tick()` is the whole mechanism; the timer only calls it, so tests drive
 * time with a ManualClock and call `tick()` themselves.
 */
export class Scheduler {
  private readonly jobs: Job[] = [];
  private readonly holder = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly log: Log,
  ) {}

  add(job: Job): void {
    this.jobs.push(job);
  }

  /** Claims and runs every job whose period has opened; returns the names that ran here. */
  async tick(): Promise<string[]> {
    const ran: string[] = [];
    for (const job of this.jobs) {
      const now = this.clock.now();
      if (!(await claimPeriod(this.db, job.name, this.holder, now, job.everyMs))) continue;
      try {
        await job.run(now);
        ran.push(job.name);
      } catch (error) {
        // One failing job must not starve the others; the next period retries it.
        this.log.error({ err: error, job: job.name }, "scheduled job failed");
      }
    }
    return ran;
  }

  /** Ticks now and then every `intervalMs` until `close()`. */
  start(intervalMs = 15 * SECOND): void {
    if (this.timer !== null) return;
    const run = () => {
      if (this.running !== null) return;
      this.running = this.tick()
        .then(() => undefined)
        .catch((error: unknown) => this.log.error({ err: error }, "scheduler tick failed"))
        .finally(() => {
          this.running = null;
        });
    };
    run();
    this.timer = setInterval(run, intervalMs);
    // The scheduler never keeps the process alive on its own.
    this.timer.unref();
  }

  /** Stops the timer and waits for a tick in progress, so nothing touches a closed store. */
  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
