import { sql, type Kysely } from "kysely";
import { DAY, HOUR, SECOND, type Clock } from "../../config/clock.ts";
import { appGone, type Database } from "../../store/index.ts";

export interface HourCounts {
  calls: number;
  failures: number;
}

/** The console charts 7 days; a day more covers the hour that straddles the edge. */
export const CALL_COUNT_RETENTION_MS = 8 * DAY;
export const CALL_COUNT_FLUSH_MS = 10 * SECOND;

interface Pending extends HourCounts {
  appId: string;
  hour: number;
}

/**
 * Op calls and failures per app per hour, for the console's chart. A call only bumps a counter
 * in memory; the counters are added to the store every few seconds (and at close), so the hot
 * path pays no write and several instances' counts add up in the same rows. Reads add this
 * instance's unwritten counts, so a person sees the call they just made.
 */
export class CallCounts {
  private pending = new Map<string, Pending>();
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    flushMs = CALL_COUNT_FLUSH_MS,
  ) {
    this.timer = setInterval(() => void this.flush().catch(() => undefined), flushMs);
    this.timer.unref();
  }

  count(appId: string, failed: boolean): void {
    const hour = Math.floor(this.clock.now() / HOUR) * HOUR;
    const key = `${appId}\n${hour}`;
    let entry = this.pending.get(key);
    if (entry === undefined) {
      entry = { appId, hour, calls: 0, failures: 0 };
      this.pending.set(key, entry);
    }
    entry.calls += 1;
    if (failed) entry.failures += 1;
  }

  /** Adds what was counted since the last flush to the store; one flush at a time. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    try {
      await this.db.transaction().execute(async (trx) => {
        for (const e of batch) {
          await trx
            .insertInto("op_call_counts")
            .values({ app_id: e.appId, hour: e.hour, calls: e.calls, failures: e.failures })
            .onConflict((oc) =>
              oc.columns(["app_id", "hour"]).doUpdateSet({
                calls: sql<number>`op_call_counts.calls + ${e.calls}`,
                failures: sql<number>`op_call_counts.failures + ${e.failures}`,
              }),
            )
            .execute();
        }
      });
    } catch (error) {
      // The store refused: keep the counts for the next flush rather than lose them.
      for (const e of batch) this.restore(e);
      throw error;
    }
  }

  private restore(e: Pending): void {
    const key = `${e.appId}\n${e.hour}`;
    const entry = this.pending.get(key) ?? { appId: e.appId, hour: e.hour, calls: 0, failures: 0 };
    this.pending.set(key, { ...entry, calls: entry.calls + e.calls, failures: entry.failures + e.failures });
  }

  /** Calls and failures per hour since `since`, keyed by the hour's start in ms. */
  async perHour(appId: string, since: number): Promise<Map<number, HourCounts>> {
    const rows = await this.db.selectFrom("op_call_counts").select(["hour", "calls", "failures"]).where("app_id", "=", appId).where("hour", ">=", since).execute();
    const out = new Map(rows.map((r) => [Number(r.hour), { calls: Number(r.calls), failures: Number(r.failures) }]));
    for (const e of this.pending.values()) {
      if (e.appId !== appId || e.hour < since) continue;
      const stored = out.get(e.hour) ?? { calls: 0, failures: 0 };
      out.set(e.hour, { calls: stored.calls + e.calls, failures: stored.failures + e.failures });
    }
    return out;
  }

  /** The hour of each app's latest call within retention (the dashboard's "last call"). */
  async lastCalled(appIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (appIds.length === 0) return out;
    const rows = await this.db
      .selectFrom("op_call_counts")
      .select(["app_id", (eb) => eb.fn.max("hour").as("hour")])
      .where("app_id", "in", appIds)
      .groupBy("app_id")
      .execute();
    for (const r of rows) out.set(r.app_id, Number(r.hour));
    for (const e of this.pending.values()) {
      if (appIds.includes(e.appId) && e.hour > (out.get(e.appId) ?? -1)) out.set(e.appId, e.hour);
    }
    return out;
  }

  /**
   * Retention sweep for the scheduler; and the last day's hours of apps that are gone, which a
   * flush under way at an app's deletion, or another instance's, added after it.
   */
  async sweep(): Promise<void> {
    const now = this.clock.now();
    await this.db.deleteFrom("op_call_counts").where("hour", "<", now - CALL_COUNT_RETENTION_MS).execute();
    await this.db
      .deleteFrom("op_call_counts")
      .where("hour", ">=", now - DAY)
      .where(appGone("op_call_counts"))
      .execute();
  }

  async dropApp(appId: string): Promise<void> {
    // A flush already under way may still add an hour of a deleted app; the sweep takes it.
    for (const [key, e] of this.pending) if (e.appId === appId) this.pending.delete(key);
    await this.db.deleteFrom("op_call_counts").where("app_id", "=", appId).execute();
  }

  /** Writes what is left; the store must still be open. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch(() => undefined);
  }
}
