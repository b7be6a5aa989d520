import type { Transaction } from "kysely";
import { ApiError } from "../../errors/index.ts";
import type { Store } from "../open.ts";
import type { Database } from "../schema/index.ts";

type Work = (trx: Transaction<Database>) => Promise<void>;

interface Item {
  /** What the work locks (an app id); PostgreSQL batches lock them all up front, sorted. */
  lock: string;
  work: Work;
  done(): void;
  fail(error: unknown): void;
}

const MAX_BATCH = 256;

/**
 * Group commit for small write transactions. Writes that queue while a batch is under way share
 * the next transaction and its one commit: on SQLite that is one fsync per batch instead of one
 * per write (better-sqlite3 runs a commit on Node's thread); on PostgreSQL it is one commit
 * flush, and writes of one app stop waiting for each other's commits on its row lock.
 *
 * Contract: a work function may throw an ApiError (a refusal) only before it writes; that item
 * fails alone. Any other error rolls the whole batch back and fails every item in it.
 *
 * `lockAll` takes every lock the batch needs before any work runs; on PostgreSQL it does so in
 * one order for every instance, so two instances' batches queue instead of deadlocking. What it
 * returns is handed to `committed` once the batch has committed, before any writer is answered.
 */
export class WriteBatcher<Locked = void> {
  private readonly queue: Item[] = [];
  private flushing = false;

  constructor(
    private readonly store: Store,
    private readonly lockAll: (trx: Transaction<Database>, locks: string[]) => Promise<Locked>,
    private readonly committed: (locked: Locked) => void = () => undefined,
  ) {}

  run<T>(lock: string, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let value: T;
      this.queue.push({
        lock,
        work: async (trx) => {
          value = await work(trx);
        },
        done: () => resolve(value),
        fail: reject,
      });
      // The check phase, not now: writes that arrived in this same turn (binding calls come
      // several to a socket read) share the first commit instead of waiting for the second.
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      const settle: (() => void)[] = [];
      try {
        const locked = await this.store.db.transaction().execute(async (trx) => {
          const locked = await this.lockAll(trx, [...new Set(batch.map((item) => item.lock))]);
          for (const item of batch) {
            try {
              await item.work(trx);
              settle.push(() => item.done());
            } catch (error) {
              if (!(error instanceof ApiError)) throw error;
              settle.push(() => item.fail(error));
            }
          }
          return locked;
        });
        this.committed(locked);
        for (const s of settle) s();
      } catch (error) {
        for (const item of batch) item.fail(error);
      }
    }
    this.flushing = false;
  }
}
