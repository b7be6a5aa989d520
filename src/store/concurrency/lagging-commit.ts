import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../schema/index.ts";

/** At most this long between a lagging commit and the WAL sync that makes it durable. */
export const SYNC_WITHIN_MS = 1000;

/**
 * SQLite transactions that skip their own fsync, for diagnostics whose loss to an operating
 * system crash (never to a crash of this process) would cost nobody anything they acted on:
 * webhook delivery records. The connection runs such a transaction with `synchronous = NORMAL`
 * and returns to the store's `FULL` (open.ts) before anything else can use it (the dialect has
 * one connection; `db.connection()` holds it throughout). Its frames are in the WAL when it
 * returns; the next durable commit's fsync covers them, and so does the checkpoint run at most
 * `SYNC_WITHIN_MS` after it. SQLite keeps every commit consistent either way (documented for
 * WAL with NORMAL: a transaction may roll back after a power loss; nothing is corrupted).
 *
 * Why: under load one fsync of ~0.5–1 ms blocks Node's thread per batch of records, which cost a
 * webhook delivery ~10 % of its throughput even shared by ~30 deliveries.
 */
export class LaggingCommit {
  private sync: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly syncWithinMs = SYNC_WITHIN_MS,
  ) {}

  async run(work: (trx: Transaction<Database>) => Promise<void>): Promise<void> {
    await this.db.connection().execute(async (conn) => {
      await sql`pragma synchronous = NORMAL`.execute(conn);
      try {
        await conn.transaction().execute(work);
      } finally {
        await sql`pragma synchronous = FULL`.execute(conn);
      }
    });
    if (this.sync === null) {
      // A checkpoint that fails (the store closing) leaves the sync to the next durable commit.
      this.sync = setTimeout(() => void this.checkpoint().catch(() => undefined), this.syncWithinMs);
      this.sync.unref();
    }
  }

  /** Syncs what lagging commits left unsynced now; the store may close after. */
  async close(): Promise<void> {
    if (this.sync !== null) await this.checkpoint();
  }

  // A checkpoint syncs the WAL before copying it back; PASSIVE waits for no reader or writer.
  private async checkpoint(): Promise<void> {
    if (this.sync !== null) clearTimeout(this.sync);
    this.sync = null;
    await sql`pragma wal_checkpoint(PASSIVE)`.execute(this.db);
  }
}
