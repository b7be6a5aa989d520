import type { Kysely, Transaction } from "kysely";
import type { Dialect } from "../dialect.ts";
import type { Database } from "../schema/index.ts";

type Work<T> = (trx: Transaction<Database>) => Promise<T>;
interface Job {
  work: Work<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

// Enough to amortise a commit over many writers without holding any one of them long.
const MAX_BATCH = 64;

/**
 * Group commit for independent insert-heavy writes (anonymous app creates, webhook delivery
 * records). SQLite with synchronous=FULL pays one fsync per commit and has a single writer, so
 * writes that arrive while a commit is in flight are queued and committed together in the next
 * transaction: no delay when idle, one fsync per batch under load. PostgreSQL runs each write in its own
 * transaction; its pool already commits in parallel.
 *
 * A job must be safe to run again: if any job in a batch fails, the batch rolls back and each
 * job is re-run alone, so only the failing one sees its error.
 */
export class GroupCommit {
  private readonly queue: Job[] = [];
  private flushing = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
  ) {}

  run<T>(work: Work<T>): Promise<T> {
    if (this.dialect !== "sqlite") return this.db.transaction().execute(work);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = true;
    // better-sqlite3 runs a whole transaction inside one turn of the event loop, so nothing could
    // ever join a batch; waiting for the check phase lets requests already read this turn join.
    setImmediate(() => {
      const batch = this.queue.splice(0, MAX_BATCH);
      void this.flush(batch).finally(() => {
        this.flushing = false;
        this.pump();
      });
    });
  }

  private async flush(batch: Job[]): Promise<void> {
    if (batch.length > 1) {
      try {
        const results = await this.db.transaction().execute(async (trx) => {
          const out: unknown[] = [];
          for (const job of batch) out.push(await job.work(trx));
          return out;
        });
        batch.forEach((job, i) => job.resolve(results[i]));
        return;
      } catch {
        // Fall through: re-run each job alone so one failure does not fail its neighbours.
      }
    }
    for (const job of batch) {
      try {
        job.resolve(await this.db.transaction().execute(job.work));
      } catch (error) {
        job.reject(error);
      }
    }
  }
}
