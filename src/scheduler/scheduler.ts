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

/** Bounds on the wait between ticks: never a busy loop, and a small spread between instances. */
const MIN_WAIT_MS = 100;
const JITTER_MS = 100;

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
  private started = false;
  private running: Promise<void> | null = null;
  /** When the period the timer waits for opens, and how late the last wake-up for one was. */
  private dueAt: number | null = null;
  private lastLagMs = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly log: Log,
  ) {}

  add(job: Job): void {
    this.jobs.push(job);
  }

  /** How late the scheduler last woke for a period that had opened (ms): a busy process wakes late. */
  get lagMs(): number {
    return this.lastLagMs;
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

  /**
   * Ticks now, then again when the earliest lease among its jobs opens (whichever instance holds
   * it), and at least every `intervalMs`, until `close()`. Waking at the opening rather than on a
   * fixed beat is what lets a survivor take over a dead instance's period as soon as it ends.
   */
  start(intervalMs = 15 * SECOND): void {
    if (this.started) return;
    this.started = true;
    const run = () => {
      this.timer = null;
      let delay = intervalMs;
      const now = this.clock.now();
      if (this.dueAt !== null && this.dueAt <= now) this.lastLagMs = now - this.dueAt;
      this.dueAt = null;
      this.running = this.tick()
        .then(() => this.nextOpening())
        .then((opening) => {
          // A little jitter so instances woken by the same opening do not all race for it.
          if (opening !== null) delay = Math.min(intervalMs, Math.max(MIN_WAIT_MS, opening - this.clock.now()) + Math.random() * JITTER_MS);
          // The wake-up is late by what exceeds the wait for the opening plus its jitter's worst.
          if (opening !== null) this.dueAt = Math.max(opening, this.clock.now()) + JITTER_MS;
        })
        .catch((error: unknown) => this.log.error({ err: error }, "scheduler tick failed"))
        .finally(() => {
          this.running = null;
          if (!this.started) return;
          this.timer = setTimeout(run, delay);
          // The scheduler never keeps the process alive on its own.
          this.timer.unref();
        });
    };
    run();
  }

  /** When the next period of any of its jobs opens (ms since the epoch), or null with no jobs. */
  async nextOpening(): Promise<number | null> {
    if (this.jobs.length === 0) return null;
    const names = this.jobs.map((job) => job.name);
    const row = await this.db
      .selectFrom("leases")
      .select((eb) => [eb.fn.min("next_at").as("at"), eb.fn.countAll().as("claimed")])
      .where("name", "in", names)
      .executeTakeFirstOrThrow();
    // A job never claimed has no row yet: its first period is open now.
    if (Number(row.claimed) < names.length || row.at === null) return this.clock.now();
    return Number(row.at);
  }

  /** Stops the timer and waits for a tick in progress, so nothing touches a closed store. */
  async close(): Promise<void> {
    this.started = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
