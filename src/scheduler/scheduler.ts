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
  /**
   * Jobs of one lane run one after another, lanes side by side (default "sweeps"): a job that
   * waits on the network (DNS, S3) gets a lane of its own, so its outage holds up no other.
   */
  lane?: string;
}

const DEFAULT_LANE = "sweeps";

/** Bounds on the wait between ticks: never a busy loop, and a small spread between instances. */
const MIN_WAIT_MS = 100;
const JITTER_MS = 100;

type Log = Pick<FastifyBaseLogger, "error" | "info">;

/**
 * Runs periodic jobs (the reaper, retention sweeps, routine ticks) on whichever instance claims
 * each period first, each in its lane (Job.lane), so a slow one holds up only its own. `tick()`
 * is the whole mechanism; the timer only calls it, so tests drive time with a ManualClock and
 * call `tick()` themselves.
 */
export class Scheduler {
  private readonly jobs: Job[] = [];
  private readonly holder = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private running: Promise<void> | null = null;
  /** Each lane's last job, queued or running: the next one of that lane starts after it. */
  private readonly lanes = new Map<string, Promise<unknown>>();
  /** Jobs queued or running here: a period that opens meanwhile is left to another instance, or to a later tick. */
  private readonly busy = new Set<string>();
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

  /** Claims and runs every job whose period has opened; returns, once they ended, the names that ran here without failing. */
  async tick(): Promise<string[]> {
    const started = await this.startDue();
    const ran: string[] = [];
    for (const [name, outcome] of started) if (await outcome) ran.push(name);
    return ran;
  }

  /**
   * Claims every job whose period has opened and that is not still queued or running here, and
   * queues it in its lane; answers each one's outcome (true: it ran without failing), without
   * waiting for them. The timer ticks through this, so a slow job never delays the next claims.
   */
  private async startDue(): Promise<[string, Promise<boolean>][]> {
    const started: [string, Promise<boolean>][] = [];
    for (const job of this.jobs) {
      if (this.busy.has(job.name)) continue;
      const now = this.clock.now();
      if (!(await claimPeriod(this.db, job.name, this.holder, now, job.everyMs))) continue;
      this.busy.add(job.name);
      const lane = job.lane ?? DEFAULT_LANE;
      const outcome = (this.lanes.get(lane) ?? Promise.resolve())
        .then(() => job.run(now))
        .then(
          () => true,
          (error: unknown) => {
            // One failing job must not starve the others; the next period retries it.
            this.log.error({ err: error, job: job.name }, "scheduled job failed");
            return false;
          },
        )
        .finally(() => this.busy.delete(job.name));
      this.lanes.set(lane, outcome);
      started.push([job.name, outcome]);
    }
    return started;
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
      this.running = this.startDue()
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

  /** Stops the timer and waits for a tick in progress and the jobs it started, so nothing touches a closed store. */
  async close(): Promise<void> {
    this.started = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    await Promise.all(this.lanes.values());
  }
}
