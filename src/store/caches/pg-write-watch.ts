import { randomBytes } from "node:crypto";
import pg from "pg";
import type { ReadStamp } from "./stamped-cache.ts";
import { WriteWatch } from "./write-watch.ts";

/** The channel migration 030's triggers notify on when a row a hot-path read joins changes. */
const CACHE_CHANNEL = "brickyard_cache";
/** How often the listening connection proves itself (a notification it sends comes back). */
const BEAT_MS = 200;
/** A stamp is handed out only while the newest beat back was sent within this long. */
const FRESH_MS = 600;
/** A beat not back after this long: the connection is given up and opened anew. */
const STALLED_MS = 5000;
const RECONNECT_MS = 500;
/** How the listening connection names itself in pg_stat_activity. */
const WATCH_APPLICATION_NAME = "brickyard-cache-watch";

/**
 * WriteWatch's counterpart on PostgreSQL, where other instances write too. The stamp moves:
 * - at once, before and after this instance runs a statement that may change a watched row
 *   (pg-statements.ts calls `touch`; after too, since a read on another pooled connection while
 *   the write's transaction is open sees the old row and would keep it under the moved stamp);
 * - when any connection's transaction that changed a watched row commits: migration 030's
 *   triggers notify on CACHE_CHANNEL, which one dedicated connection here listens on.
 *
 * A notification can be lost only with its connection, so the stamp is trusted only while that
 * connection is known to be delivering. It sends itself a beat every BEAT_MS; PostgreSQL delivers
 * notifications in commit order, so a beat back means every change committed before the beat was
 * sent has been counted. While the newest beat back was sent more than FRESH_MS ago (a cut or
 * stalled connection, a reconnect under way) `stamp()` is null and every read goes to the
 * database, as with no cache; each new connection starts a new generation, so nothing read
 * before a gap is trusted after it. A change made elsewhere is thus seen here within FRESH_MS
 * plus a notification's trip, and a change made here at once.
 */
export class PgWriteWatch implements ReadStamp {
  private generation = 0;
  private local = 0;
  private remote = 0;
  /** When (performance.now()) the newest beat that came back was sent. */
  private trustedSince = -Infinity;
  private client: pg.Client | null = null;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  /** The beat on its way: its number and when it was sent. */
  private beat: { seq: number; sentAt: number } | null = null;
  private seq = 0;
  private readonly self = `beat:${randomBytes(6).toString("hex")}:`;

  private readonly listeners: ((healthy: boolean, error?: unknown) => void)[] = [];

  constructor(private readonly databaseUrl: string) {
    this.connect();
  }

  /** Calls `listener` when the channel is lost (with why) and when it delivers again: once each, in turn. */
  onHealth(listener: (healthy: boolean, error?: unknown) => void): void {
    this.listeners.push(listener);
  }

  /** What listeners were last told: an outage is told once, not at each failed reconnect. */
  private told: boolean | null = null;

  private tell(healthy: boolean, error?: unknown): void {
    if (this.told === healthy) return;
    this.told = healthy;
    for (const listener of this.listeners) listener(healthy, error);
  }

  /** Whether `sql`, run on PostgreSQL, may change a watched row: a plain select never does (no function we call from one writes them). */
  static moves(sql: string): boolean {
    return !/^\s*select\b/i.test(sql) && WriteWatch.moves(sql);
  }

  touch(): void {
    this.local++;
  }

  stamp(): string | null {
    if (performance.now() - this.trustedSince > FRESH_MS) return null;
    return `${this.generation}:${this.local}:${this.remote}`;
  }

  /** Whether stamps are handed out now (the channel delivered within FRESH_MS). */
  healthy(): boolean {
    return this.stamp() !== null;
  }

  /** The listening connection's server process, while it is open (pg_stat_activity.pid). */
  listenerPid(): number | null {
    return this.client === null ? null : processIdOf(this.client);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private connect(): void {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: WATCH_APPLICATION_NAME, connectionTimeoutMillis: STALLED_MS, keepAlive: true });
    this.client = client;
    this.generation++;
    this.beat = null;
    client.on("notification", (message) => {
      if (message.channel === CACHE_CHANNEL && this.client === client) this.heard(message.payload ?? "", message.processId === processIdOf(client));
    });
    const lost = (error?: unknown) => this.lost(client, error);
    client.on("error", lost);
    client.on("end", () => lost());
    client
      .connect()
      .then(() => client.query(`LISTEN ${CACHE_CHANNEL}`))
      .then(() => this.tick(client), lost);
  }

  /** `own`: sent by the server process this connection listens through (its pid in the notification). */
  private heard(payload: string, own: boolean): void {
    if (!payload.startsWith("beat:")) {
      this.remote++;
      return;
    }
    // Another instance's beat tells nothing about this connection; nor does ours sent through
    // another server process (a pooler in transaction mode moves a session's statements between
    // server connections, and the LISTEN may not be where the beat ran).
    if (!own || !payload.startsWith(this.self) || this.beat === null || Number(payload.slice(this.self.length)) !== this.beat.seq) return;
    const was = this.healthy();
    this.trustedSince = this.beat.sentAt;
    this.beat = null;
    if (!was) this.tell(true);
  }

  /** Sends the next beat unless one is still on its way; gives the connection up when that one stalled. */
  private tick(client: pg.Client): void {
    if (this.closed || this.client !== client) return;
    const now = performance.now();
    if (this.beat !== null && now - this.beat.sentAt > STALLED_MS) {
      this.lost(client, new Error(`no beat back in ${STALLED_MS} ms`));
      return;
    }
    if (this.beat === null) {
      this.beat = { seq: ++this.seq, sentAt: now };
      client.query("select pg_notify($1, $2)", [CACHE_CHANNEL, `${this.self}${this.seq}`]).catch((error: unknown) => this.lost(client, error));
    }
    this.timer = setTimeout(() => this.tick(client), BEAT_MS);
    this.timer.unref();
  }

  private lost(client: pg.Client, error?: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    this.trustedSince = -Infinity;
    if (this.timer !== null) clearTimeout(this.timer);
    void client.end().catch(() => undefined);
    if (this.closed) return;
    this.tell(false, error);
    this.timer = setTimeout(() => this.connect(), RECONNECT_MS);
    this.timer.unref();
  }
}

/** The server process a connection talks to (pg sets it at connect; its types leave it out). */
function processIdOf(client: pg.Client): number | null {
  return (client as unknown as { processID?: number | null }).processID ?? null;
}
