import { sql, type Kysely } from "kysely";
import pg from "pg";
import type { Logger } from "pino";
import type { Database } from "./schema/index.ts";

/** The PostgreSQL channel of every instance's live app events; app log lines have their own. */
export const LIVE_CHANNEL = "brickyard_live";
export const LOGS_CHANNEL = "brickyard_logs";
// NOTIFY payloads are capped at 8000 bytes; stay well below.
export const NOTIFY_PAYLOAD_MAX = 7000;
const RECONNECT_MS = 2000;
/** Failed reconnects wait twice as long each time, up to this. */
const RECONNECT_MAX_MS = 30_000;

/**
 * PostgreSQL LISTEN/NOTIFY for messages every instance must see (ARCHITECTURE: scale-out). Sends
 * go through the pool; receiving holds one dedicated connection, reopened after it drops, and
 * again and again while the database is away: live events travel through NOTIFY even on the
 * instance that sends them, so without it no stream on this instance would hear anything.
 */
export class PgNotifier {
  private client: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly databaseUrl: string,
    private readonly db: Kysely<Database>,
    private readonly log: Logger,
    private readonly channel: typeof LIVE_CHANNEL | typeof LOGS_CHANNEL = LIVE_CHANNEL,
  ) {}

  /** Resolves once listening; `deliver` receives every payload sent on the channel, ours included. */
  async listen(deliver: (payload: string) => void): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    client.on("notification", (message) => {
      if (message.channel === this.channel && message.payload !== undefined) deliver(message.payload);
    });
    // Only the connection that was listening schedules the next one when it drops; one still
    // connecting fails its attempt instead, which `reopen` retries.
    const lost = (error?: Error) => {
      if (this.closed || this.client !== client) return;
      this.client = null;
      if (error !== undefined) this.log.warn({ err: error, channel: this.channel }, "LISTEN connection lost; reconnecting");
      void client.end().catch(() => undefined);
      this.reopen(deliver, RECONNECT_MS);
    };
    client.on("error", lost);
    client.on("end", () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (error) {
      void client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    if (this.closed) await this.close();
  }

  /** Listens again after `delayMs`, and after each failure waits longer, until it listens or is closed. */
  private reopen(deliver: (payload: string) => void, delayMs: number): void {
    if (this.closed || this.retry !== null) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.listen(deliver).catch((err: unknown) => {
        this.log.warn({ err, channel: this.channel, retryInMs: Math.min(delayMs * 2, RECONNECT_MAX_MS) }, "LISTEN reconnect failed");
        this.reopen(deliver, Math.min(delayMs * 2, RECONNECT_MAX_MS));
      });
    }, delayMs);
    this.retry.unref();
  }

  async notify(payload: string): Promise<void> {
    await sql`select pg_notify(${this.channel}, ${payload})`.execute(this.db);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== null) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    if (client !== null) await client.end().catch(() => undefined);
  }
}
