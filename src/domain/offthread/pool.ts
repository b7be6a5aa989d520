import { Worker } from "node:worker_threads";
import { deserialize, type Job, type JobResult, type Reply } from "./jobs.ts";

/** How long one job may run before the worker is stopped and the job refused. */
export const JOB_DEADLINE_MS = 5_000;

interface Queued {
  id: number;
  job: Job;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * One worker thread for the CPU-bound checks of what apps write: parsing a 256 KiB module with
 * acorn costs ~120 ms and compiling its route schemas with ajv hundreds more, which on Node's
 * thread would stall every request. Jobs run one at a time under a deadline; a job past it
 * stops the worker (and is refused as unbounded), and the next job starts a fresh one. The
 * worker starts on first use and keeps the process alive only while it has a job.
 */
export class OffThread {
  private worker: Worker | null = null;
  private ready: Promise<Worker> | null = null;
  private readonly queue: Queued[] = [];
  private running: { item: Queued; timer: NodeJS.Timeout } | null = null;
  private nextId = 0;
  /** The worker once it said it is ready; null while none is. */
  private live: Worker | null = null;
  private starting = false;

  /** Process-wide instance: one worker serves every caller. */
  static readonly shared = new OffThread();

  run<J extends Job>(job: J): Promise<JobResult<J>> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, job, resolve: resolve as (value: unknown) => void, reject });
      this.pump();
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.ready = null;
    this.live = null;
    await worker?.terminate();
  }

  /**
   * Sends the next job once the worker is up. Synchronous on purpose: every caller of run()
   * pumps, and only the check-and-set of `running` in one turn keeps them to one job at a time.
   */
  private pump(): void {
    if (this.running !== null || this.starting || this.queue.length === 0) return;
    const worker = this.live;
    if (worker === null) {
      this.starting = true;
      this.start().then(
        () => {
          this.starting = false;
          this.pump();
        },
        (error: unknown) => {
          this.starting = false;
          this.queue.shift()?.reject(error instanceof Error ? error : new Error(String(error)));
          this.pump();
        },
      );
      return;
    }
    const item = this.queue.shift() as Queued;
    const timer = setTimeout(() => {
      // The worker is stuck in this job: refuse it, stop the worker, go on with a fresh one.
      this.settle(item.id, { ok: false, error: { type: "unbounded", message: `checking it took more than ${JOB_DEADLINE_MS} ms` } });
      void this.close();
    }, JOB_DEADLINE_MS);
    this.running = { item, timer };
    // Held while it has work (a caller awaits it), let go once idle (see settle).
    worker.ref();
    worker.postMessage({ id: item.id, job: item.job });
  }

  private settle(id: number, reply: Reply): void {
    const running = this.running;
    if (running === null || running.item.id !== id) return;
    clearTimeout(running.timer);
    this.running = null;
    if (reply.ok) running.item.resolve(reply.value);
    else running.item.reject(deserialize(reply.error));
    this.pump();
    if (this.running === null) this.live?.unref();
  }

  private start(): Promise<Worker> {
    this.ready ??= new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(new URL("./jobs.thread.js", import.meta.url));
      worker.on("message", (message: { ready: true } | { id: number; reply: Reply }) => {
        if ("ready" in message) {
          this.live = worker;
          resolve(worker);
        }
        else this.settle(message.id, message.reply);
      });
      worker.once("error", reject);
      worker.once("exit", () => {
        if (this.worker === worker) {
          this.worker = null;
          this.ready = null;
        }
        if (this.live === worker) this.live = null;
        // A job in flight when the worker died is refused rather than left waiting.
        const running = this.running;
        if (running !== null) this.settle(running.item.id, { ok: false, error: { type: "error", message: "the check worker stopped" } });
      });
      this.worker = worker;
    });
    return this.ready;
  }
}
