import { sql } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { lockKey } from "../../store/locks.ts";
import type { Store } from "../../store/index.ts";
import { APP_CAP_BYTES, checkKey, encodeCursor, lastWrites, parseList, storageFull, type ListOptions, type ListPage } from "./limits.ts";
import type { KvWrite } from "./storage.ts";

/** All of one app's visitors' stores together: one app's worth (so a flood of new visitors cannot fill the disk). */
export const VISITORS_CAP_BYTES = APP_CAP_BYTES;

/** A visitor's store with no write for this long is swept (a year, as their cookie lives). */
export const VISITOR_IDLE_MS = 365 * 24 * 60 * 60 * 1000;

/** Whose store a visitor's op call reads and writes: the app's, and the visitor's id on its custom domain. */
export interface VisitorStore {
  appId: string;
  visitorId: string;
}

/**
 * The KV store of one anonymous visitor of an app on its custom domain (DECISIONS §12). Apart
 * from the app's own (its own table): an op call made for a visitor reads and writes only here,
 * with the app's caps for each visitor's store and one app's worth for all of them together, no
 * write-behind and no cached reads (the isolate's cache holds the app's values). A visitor's
 * writes send no live `data` events: those are the owner's store's.
 */
export class VisitorKv {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async get(s: VisitorStore, key: string): Promise<string | null> {
    const row = await this.scope(s).select("value").where("key", "=", checkKey(key)).executeTakeFirst();
    return row?.value ?? null;
  }

  /** Several writes as one commit, checked against the visitor's cap on what the store holds after. */
  async commit(s: VisitorStore, writes: readonly KvWrite[]): Promise<void> {
    const entries = lastWrites(writes);
    if (entries.length === 0) return;
    await this.store.db.transaction().execute(async (trx) => {
      // An app's visitors' writes take turns (PostgreSQL), so two of them cannot both fit under a cap.
      await lockKey(trx, this.store.dialect, `visitor-kv:${s.appId}`);
      const bytes = (q: ReturnType<typeof trx.selectFrom<"visitor_kv">>) => q.select((eb) => eb.fn.coalesce(eb.fn.sum<number>("size"), eb.lit(0)).as("bytes")).executeTakeFirstOrThrow();
      const mine = trx.selectFrom("visitor_kv").where("app_id", "=", s.appId).where("visitor_id", "=", s.visitorId);
      const used = Number((await bytes(mine)).bytes);
      const replaced = Number((await bytes(mine.where("key", "in", entries.map((e) => e.key)))).bytes);
      const adding = entries.reduce((sum, e) => sum + e.size, 0);
      if (used - replaced + adding > APP_CAP_BYTES) storageFull(used, adding, replaced);
      // Anyone can become a new visitor: all of an app's visitors together hold what one store may.
      const everyone = Number((await bytes(trx.selectFrom("visitor_kv").where("app_id", "=", s.appId))).bytes);
      if (everyone - replaced + adding > VISITORS_CAP_BYTES) {
        throw apiError("storage_full", `this app's visitors' stores together would hold ${everyone - replaced + adding} bytes; together they hold at most ${VISITORS_CAP_BYTES}`);
      }
      const now = this.clock.now();
      for (const { key, value, size } of entries) {
        await trx
          .insertInto("visitor_kv")
          .values({ app_id: s.appId, visitor_id: s.visitorId, key, value, size, updated_at: now })
          .onConflict((oc) => oc.columns(["app_id", "visitor_id", "key"]).doUpdateSet({ value, size, updated_at: now }))
          .execute();
      }
    });
  }

  async delete(s: VisitorStore, key: string): Promise<boolean> {
    const result = await this.store.db.deleteFrom("visitor_kv").where("app_id", "=", s.appId).where("visitor_id", "=", s.visitorId).where("key", "=", checkKey(key)).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async list(s: VisitorStore, options: ListOptions): Promise<ListPage> {
    const { prefix, limit, after } = parseList(options);
    let query = this.scope(s).select(["key", "size"]);
    if (prefix !== "") query = query.where(sql<string>`substr(key, 1, ${prefix.length})`, "=", prefix);
    if (after !== null) query = query.where("key", ">", after);
    const rows = await query.orderBy("key").limit(limit + 1).execute();
    const page = rows.slice(0, limit).map((r) => ({ key: r.key, size: Number(r.size) }));
    const last = page[page.length - 1];
    return { keys: page, cursor: rows.length > limit && last !== undefined ? encodeCursor(last.key) : null };
  }

  /**
   * The hourly sweep: a visitor not seen for `idleMs` (no write to any of their keys) loses their
   * store, as a browser's site data would go. Anyone can become a visitor, so stores must not
   * pile up for good.
   */
  async sweep(idleMs = VISITOR_IDLE_MS): Promise<number> {
    const cutoff = this.clock.now() - idleMs;
    const result = await this.store.db
      .deleteFrom("visitor_kv")
      .where((eb) =>
        eb.and([
          eb("updated_at", "<=", cutoff),
          eb.not(
            eb.exists(
              eb
                .selectFrom("visitor_kv as recent")
                .select("recent.key")
                .whereRef("recent.app_id", "=", "visitor_kv.app_id")
                .whereRef("recent.visitor_id", "=", "visitor_kv.visitor_id")
                .where("recent.updated_at", ">", cutoff),
            ),
          ),
        ]),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  private scope(s: VisitorStore) {
    return this.store.db.selectFrom("visitor_kv").where("app_id", "=", s.appId).where("visitor_id", "=", s.visitorId);
  }
}
