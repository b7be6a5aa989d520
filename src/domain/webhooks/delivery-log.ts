import type { Transaction } from "kysely";
import type { Database, GroupCommit, LaggingCommit } from "../../store/index.ts";

/** A record's writes (the delivery row and the webhook's last outcome), run inside a transaction. */
export type RecordWrite = (trx: Transaction<Database>) => Promise<void>;

/**
 * How long a record waits for others to share its commit. Short enough that another instance
 * reading the log sees a delivery almost as soon as its sender has the answer; long enough that
 * under load one commit (on SQLite an fsync of ~0.4 ms on Node's thread) carries tens of records.
 */
export const RECORD_DELAY_MS = 25;
// A batch goes at once past either bound: request bodies wait in memory until written.
const BATCH_RECORDS = 64;
const BATCH_BYTES = 1024 * 1024;
// Batches written but not yet stored past which senders wait for the log (see add()).
export const MAX_BACKLOG = 4;
const NO_WAIT = Promise.resolve();

/**
 * The delivery log's writer. A delivery is answered before its record is stored: the record is
 * diagnostic (spec: Webhooks, rule 5; the op's own writes are committed as every op's are), and
 * waiting for its commit cost a delivery a third of its time (the commit's fsync blocks Node's
 * thread). Records are written together every `RECORD_DELAY_MS`, and this instance's readers of
 * the log and of a webhook's last outcome call `settled()` first, so a person always sees the
 * deliveries already answered here. Like `CallCounts`, but with a delay short enough for other
 * instances too. On SQLite the batches commit without their own fsync (`LaggingCommit`: durable
 * at the next sync, within a second), on PostgreSQL through `GroupCommit`. So a crash of this
 * process loses the records still waiting (up to `RECORD_DELAY_MS`), a crash of the machine
 * also those not yet synced (up to a second); never an op's effects, which commit as any op's do.
 */
export class DeliveryLog {
  private pending: RecordWrite[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The batches under way, one after another: the log's order is the order of the answers. */
  private writing: Promise<void> = Promise.resolve();
  private backlog = 0;

  constructor(
    private readonly writes: GroupCommit,
    /** SQLite: commits that skip their own fsync; null elsewhere. */
    private readonly lagging: LaggingCommit | null,
    /** A record the store refused (its app deleted meanwhile, the disk full): it is dropped. */
    private readonly refused: (error: unknown) => void,
    private readonly delayMs = RECORD_DELAY_MS,
  ) {}

  /**
   * Queues a record. The answer to its sender waits on what this returns: nothing, unless the
   * store has fallen `MAX_BACKLOG` batches behind, when senders wait for the log to catch up, so
   * a flood of deliveries slows its senders instead of piling bodies up in memory.
   */
  add(write: RecordWrite, bytes: number): Promise<void> {
    this.pending.push(write);
    this.bytes += bytes;
    if (this.pending.length >= BATCH_RECORDS || this.bytes >= BATCH_BYTES) this.flush();
    else if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), this.delayMs);
      // Close settles the log; the timer alone should not keep a process alive.
      this.timer.unref();
    }
    return this.backlog > MAX_BACKLOG ? this.writing : NO_WAIT;
  }

  /** Writes what waits and syncs it: the store may close after. */
  async close(): Promise<void> {
    await this.settled();
    await this.lagging?.close();
  }

  /** Resolves once every record added so far is stored (or refused). */
  async settled(): Promise<void> {
    this.flush();
    await this.writing;
  }

  private flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.bytes = 0;
    // write() reports each failure to `refused` and never rejects, so the chain never breaks.
    this.backlog += 1;
    this.writing = this.writing.then(() => this.write(batch)).finally(() => (this.backlog -= 1));
  }

  /** One transaction for the batch; if the store refuses it, each record alone, so one bad record costs only itself. */
  private async write(batch: readonly RecordWrite[]): Promise<void> {
    try {
      await this.commit(async (trx) => {
        for (const write of batch) await write(trx);
      });
      return;
    } catch (error) {
      if (batch.length === 1) return this.refused(error);
    }
    for (const write of batch) await this.commit(write).catch((error: unknown) => this.refused(error));
  }

  private commit(write: RecordWrite): Promise<void> {
    return this.lagging === null ? this.writes.run(write) : this.lagging.run(write);
  }
}
