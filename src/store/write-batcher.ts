import type { Transaction } from "kysely";
import { ApiError } from "../errors/index.ts";
import type { Store } from "./open.ts";
import type { Database } from "./schema/index.ts";

type Work = (trx: Transaction<Database>) => Promise<void>;

interface Item {
  work: Work;
  done(): void;
  fail(error: unknown): void;
}

const MAX_BATCH = 256;

/**
 * Group commit for small write transactions. SQLite with synchronous=FULL pays one fsync per
 * commit (~4 ms here), which caps KV writes near 250/s; writes that queue while a commit is
 * under way share the next one. Contract: a work function may throw an ApiError (a refusal)
 * only before it writes; that item fails alone. Any other error rolls the whole batch back and
 * fails every item in it. PostgreSQL already commits concurrent transactions together and
 * locks per row, so there each write is its own transaction.
 */
export class WriteBatcher {
  private readonly queue: Item[] = [];
  private flushing = false;

  constructor(private readonly store: Store) {}

  run<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    if (this.store.dialect !== "sqlite") return this.store.db.transaction().execute(work);
    return new Promise<T>((resolve, reject) => {
      let value: T;
      this.queue.push({
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
        await this.store.db.transaction().execute(async (trx) => {
          for (const item of batch) {
            try {
              await item.work(trx);
              settle.push(() => item.done());
            } catch (error) {
              if (!(error instanceof ApiError)) throw error;
              settle.push(() => item.fail(error));
            }
          }
        });
        for (const s of settle) s();
      } catch (error) {
        for (const item of batch) item.fail(error);
      }
    }
    this.flushing = false;
  }
}
