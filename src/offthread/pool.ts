import { Worker } from "node:worker_threads";
import { THREAD_ENTRY } from "../config/paths.ts";
import { deserialize, type JobError, type Reply } from "./reply.ts";

/** How long one job may run before the worker is stopped and the job refused. */
export const JOB_DEADLINE_MS = 5_000;

/**
 * Jobs handed to the worker at once. It answers them in order, so while Node's thread is busy (a
 * commit's fsync, say) the worker goes on to the next job instead of waiting to be handed it, and
 * its answers wait together for the main thread's next turn.
 */
const MAX_IN_FLIGHT = 8;

/**
 * A job for the worker: its `type` names what to run there (the worker's program, start/jobs.ts,
 * holds the table), the rest is its structured-cloneable input.
 */
export interface OffThreadJob {
  type: string;
  [input: string]: unknown;
}

interface Queued {
  id: number;
  job: OffThreadJob;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * One worker thread for the CPU-bound checks of what apps write: parsing a 256 KiB module with
 * acorn costs ~120 ms and compiling its route schemas with ajv hundreds more, which on Node's
 * thread would stall every request. The worker runs jobs one at a time, each under a deadline
 * counted from when the job before it was answered; a job past it stops the worker (and is
 * refused as unbounded), and the jobs handed over behind it run again on a fresh one. The worker
 * starts on first use and keeps the process alive only while it has a job.
 */
export class OffThread {
  private worker: Worker | null = null;
  private ready: Promise<Worker> | null = null;
  private readonly queue: Queued[] = [];
  /** Jobs handed to the worker `handedTo`, oldest (the one it is running) first. */
  private readonly inFlight: Queued[] = [];
  private handedTo: Worker | null = null;
  private deadline: NodeJS.Timeout | null = null;
  private nextId = 0;
  /** The worker once it said it is ready; null while none is. */
  private live: Worker | null = null;
  private starting = false;

  /** Process-wide instance: one worker serves every caller. */
  static readonly shared = new OffThread();

  constructor(private readonly deadlineMs = JOB_DEADLINE_MS) {}

  /** Runs `job` in the worker; resolves with its result (of the type its caller knows it has), or rejects with its refusal. */
  run<R>(job: OffThreadJob): Promise<R> {
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
   * Hands queued jobs to the worker once it is up. Synchronous on purpose: every caller of run()
   * pumps, and only doing the check and the hand-over in one turn keeps the order jobs came in.
   */
  private pump(): void {
    if (this.starting || this.queue.length === 0) return;
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
    if (this.inFlight.length >= MAX_IN_FLIGHT) return;
    // Held while it has work (a caller awaits it), let go once idle (see settle).
    worker.ref();
    this.handedTo = worker;
    while (this.inFlight.length < MAX_IN_FLIGHT && this.queue.length > 0) {
      const item = this.queue.shift() as Queued;
      this.inFlight.push(item);
      worker.postMessage({ id: item.id, job: item.job });
    }
    this.armDeadline();
  }

  /** Starts the clock of the job the worker is on now, unless it is already running. */
  private armDeadline(): void {
    const head = this.inFlight[0];
    if (this.deadline !== null || head === undefined) return;
    this.deadline = setTimeout(() => {
      // The worker is stuck in this job: stop it, refuse the job, go on with a fresh worker.
      const stopped = this.close();
      this.abandon({ type: "unbounded", message: `checking it took more than ${this.deadlineMs} ms` });
      void stopped;
    }, this.deadlineMs);
  }

  private settle(id: number, reply: Reply): void {
    const head = this.inFlight[0];
    // Answers come in the order jobs went in; one from a worker already given up on is dropped.
    if (head === undefined || head.id !== id) return;
    this.inFlight.shift();
    this.clearDeadline();
    if (reply.ok) head.resolve(reply.value);
    else head.reject(deserialize(reply.error));
    this.armDeadline();
    this.pump();
    if (this.inFlight.length === 0) this.live?.unref();
  }

  /**
   * The worker is being stopped: the job it is running is refused with `error`, and the jobs
   * handed over behind it, which it has not answered, go back to the front of the queue.
   */
  private abandon(error: JobError): void {
    this.clearDeadline();
    this.handedTo = null;
    const [head, ...rest] = this.inFlight.splice(0);
    this.queue.unshift(...rest);
    head?.reject(deserialize(error));
    this.pump();
  }

  private clearDeadline(): void {
    if (this.deadline !== null) clearTimeout(this.deadline);
    this.deadline = null;
  }

  private start(): Promise<Worker> {
    this.ready ??= new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(THREAD_ENTRY);
      worker.on("message", (message: { ready: true } | { id: number; reply: Reply }) => {
        if ("ready" in message) {
          this.live = worker;
          resolve(worker);
        }
        else if (worker === this.handedTo) this.settle(message.id, message.reply);
      });
      worker.once("error", reject);
      worker.once("exit", () => {
        if (this.worker === worker) {
          this.worker = null;
          this.ready = null;
        }
        if (this.live === worker) this.live = null;
        // The job it was running when it died is refused rather than left waiting.
        if (this.handedTo === worker && this.inFlight.length > 0) this.abandon({ type: "error", message: "the check worker stopped" });
      });
      this.worker = worker;
    });
    return this.ready;
  }
}
