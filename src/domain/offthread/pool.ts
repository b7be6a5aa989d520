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
 * worker starts on first use and never keeps the process alive.
 */
export class OffThread {
  private worker: Worker | null = null;
  private ready: Promise<Worker> | null = null;
  private readonly queue: Queued[] = [];
  private running: { item: Queued; timer: NodeJS.Timeout } | null = null;
  private nextId = 0;

  /** Process-wide instance: one worker serves every caller. */
  static readonly shared = new OffThread();

  run<J extends Job>(job: J): Promise<JobResult<J>> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, job, resolve: resolve as (value: unknown) => void, reject });
      void this.pump();
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.ready = null;
    await worker?.terminate();
  }

  private async pump(): Promise<void> {
    if (this.running !== null) return;
    const item = this.queue.shift();
    if (item === undefined) return;
    let worker: Worker;
    try {
      worker = await this.start();
    } catch (error) {
      item.reject(error instanceof Error ? error : new Error(String(error)));
      return this.pump();
    }
    const timer = setTimeout(() => {
      // The worker is stuck in this job: refuse it, stop the worker, go on with a fresh one.
      this.settle(item.id, { ok: false, error: { type: "unbounded", message: `checking it took more than ${JOB_DEADLINE_MS} ms` } });
      void this.close();
    }, JOB_DEADLINE_MS);
    this.running = { item, timer };
    worker.postMessage({ id: item.id, job: item.job });
  }

  private settle(id: number, reply: Reply): void {
    const running = this.running;
    if (running === null || running.item.id !== id) return;
    clearTimeout(running.timer);
    this.running = null;
    if (reply.ok) running.item.resolve(reply.value);
    else running.item.reject(deserialize(reply.error));
    void this.pump();
  }

  private start(): Promise<Worker> {
    this.ready ??= new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(new URL("./jobs.thread.js", import.meta.url));
      worker.unref();
      worker.on("message", (message: { ready: true } | { id: number; reply: Reply }) => {
        if ("ready" in message) resolve(worker);
        else this.settle(message.id, message.reply);
      });
      worker.once("error", reject);
      worker.once("exit", () => {
        if (this.worker === worker) {
          this.worker = null;
          this.ready = null;
        }
        // A job in flight when the worker died is refused rather than left waiting.
        const running = this.running;
        if (running !== null) this.settle(running.item.id, { ok: false, error: { type: "error", message: "the check worker stopped" } });
      });
      this.worker = worker;
    });
    return this.ready;
  }
}
