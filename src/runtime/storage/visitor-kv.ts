import type { ExpressionBuilder } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { lockKey } from "../../store/locks.ts";
import type { Database, Store } from "../../store/index.ts";
import { APP_CAP_BYTES, checkKey, encodeCursor, keyCost, keysFull, KEYS_CAP_BYTES, keyStartsWith, lastWrites, parseList, visitorStoreFull, type ListOptions, type ListPage } from "./limits.ts";
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
 * The caps a visitor's write is checked against: values' bytes in each visitor's store and in all
 * of an app's together, and their keys' cost (limits.ts keyCost) the same two ways.
 */
export interface VisitorCaps {
  store: number;
  visitors: number;
  keys: number;
}

const CAPS: VisitorCaps = { store: APP_CAP_BYTES, visitors: VISITORS_CAP_BYTES, keys: KEYS_CAP_BYTES };

/** Idle visitors' stores the sweep removes in one transaction. */
const SWEEP_BATCH = 200;

/**
 * The KV store of one anonymous visitor of an app on its custom domain (DECISIONS §12). Apart
 * from the app's own (its own table): an op call made for a visitor reads and writes only here,
 * with the app's caps for each visitor's store and one app's worth for all of them together, no
 * write-behind and no cached reads (the isolate's cache holds the app's values). A visitor's
 * writes send no live `data` events: those are the owner's store's.
 *
 * What the stores hold, values' bytes and keys' cost (limits.ts keyCost), is kept as running
 * totals (`visitor_stores` per visitor, `visitor_totals` per app, migration 032), changed in the
 * transaction that changes the values, under the app's lock: a write reads two rows and the keys
 * it replaces, whatever the app's visitors hold.
 */
export class VisitorKv {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly caps: VisitorCaps = CAPS,
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
      await lockKey(trx, this.store.dialect, visitorsLock(s.appId));
      const mine = await trx.selectFrom("visitor_stores").select(["bytes", "key_bytes"]).where("app_id", "=", s.appId).where("visitor_id", "=", s.visitorId).executeTakeFirst();
      const all = await trx.selectFrom("visitor_totals").select(["bytes", "key_bytes"]).where("app_id", "=", s.appId).executeTakeFirst();
      const [used, keys] = [Number(mine?.bytes ?? 0), Number(mine?.key_bytes ?? 0)];
      const [everyone, everyonesKeys] = [Number(all?.bytes ?? 0), Number(all?.key_bytes ?? 0)];
      const old = await trx
        .selectFrom("visitor_kv")
        .select(["key", "size"])
        .where("app_id", "=", s.appId)
        .where("visitor_id", "=", s.visitorId)
        .where("key", "in", entries.map((e) => e.key))
        .execute();
      const replaced = old.reduce((sum, row) => sum + Number(row.size), 0);
      const existing = new Set(old.map((row) => row.key));
      const addingKeys = entries.reduce((sum, e) => sum + (existing.has(e.key) ? 0 : keyCost(e.key)), 0);
      const adding = entries.reduce((sum, e) => sum + e.size, 0);
      if (used - replaced + adding > this.caps.store) visitorStoreFull(used, adding, replaced);
      if (keys + addingKeys > this.caps.keys) keysFull(keys, addingKeys, this.caps.keys);
      // Anyone can become a new visitor: all of an app's visitors together hold what one store may.
      if (everyone - replaced + adding > this.caps.visitors) {
        throw apiError("storage_full", `this app's visitors' stores together would hold ${everyone - replaced + adding} bytes; together they hold at most ${this.caps.visitors}`);
      }
      if (everyonesKeys + addingKeys > this.caps.keys) {
        throw apiError("storage_full", `this app's visitors' keys together would cost ${everyonesKeys + addingKeys} bytes; together they may cost ${this.caps.keys}`);
      }
      const now = this.clock.now();
      for (const { key, value, size } of entries) {
        await trx
          .insertInto("visitor_kv")
          .values({ app_id: s.appId, visitor_id: s.visitorId, key, value, size, updated_at: now })
          .onConflict((oc) => oc.columns(["app_id", "visitor_id", "key"]).doUpdateSet({ value, size, updated_at: now }))
          .execute();
      }
      const store = { bytes: used - replaced + adding, key_bytes: keys + addingKeys, updated_at: now };
      await trx
        .insertInto("visitor_stores")
        .values({ app_id: s.appId, visitor_id: s.visitorId, ...store })
        .onConflict((oc) => oc.columns(["app_id", "visitor_id"]).doUpdateSet(store))
        .execute();
      const totals = { bytes: everyone - replaced + adding, key_bytes: everyonesKeys + addingKeys };
      await trx
        .insertInto("visitor_totals")
        .values({ app_id: s.appId, ...totals })
        .onConflict((oc) => oc.column("app_id").doUpdateSet(totals))
        .execute();
    });
  }

  async delete(s: VisitorStore, key: string): Promise<boolean> {
    checkKey(key);
    return await this.store.db.transaction().execute(async (trx) => {
      await lockKey(trx, this.store.dialect, visitorsLock(s.appId));
      const gone = await trx.deleteFrom("visitor_kv").where("app_id", "=", s.appId).where("visitor_id", "=", s.visitorId).where("key", "=", key).returning("size").executeTakeFirst();
      if (gone === undefined) return false;
      const [size, cost] = [Number(gone.size), keyCost(key)];
      const less = (eb: ExpressionBuilder<Database, "visitor_stores" | "visitor_totals">) => ({ bytes: eb("bytes", "-", size), key_bytes: eb("key_bytes", "-", cost) });
      await trx.updateTable("visitor_stores").set(less).where("app_id", "=", s.appId).where("visitor_id", "=", s.visitorId).execute();
      await trx.updateTable("visitor_totals").set(less).where("app_id", "=", s.appId).execute();
      return true;
    });
  }

  async list(s: VisitorStore, options: ListOptions): Promise<ListPage> {
    const { prefix, limit, after } = parseList(options);
    let query = this.scope(s).select(["key", "size"]);
    if (prefix !== "") query = query.where(keyStartsWith(prefix));
    if (after !== null) query = query.where("key", ">", after);
    const rows = await query.orderBy("key").limit(limit + 1).execute();
    const page = rows.slice(0, limit).map((r) => ({ key: r.key, size: Number(r.size) }));
    const last = page[page.length - 1];
    return { keys: page, cursor: rows.length > limit && last !== undefined ? encodeCursor(last.key) : null };
  }

  /**
   * The hourly sweep: a visitor not seen for `idleMs` (no write to their store) loses it, as a
   * browser's site data would go. Anyone can become a visitor, so stores must not pile up for
   * good. Returns how many stores went.
   */
  async sweep(idleMs = VISITOR_IDLE_MS): Promise<number> {
    const cutoff = this.clock.now() - idleMs;
    let swept = 0;
    for (;;) {
      const idle = await this.store.db.selectFrom("visitor_stores").select(["app_id", "visitor_id"]).where("updated_at", "<=", cutoff).orderBy("updated_at").limit(SWEEP_BATCH).execute();
      if (idle.length === 0) return swept;
      for (const [appId, visitorIds] of groupBy(idle)) swept += await this.removeIdle(appId, visitorIds, cutoff);
      if (idle.length < SWEEP_BATCH) return swept;
    }
  }

  /** Removes those of `visitorIds`' stores still idle since `cutoff` under the app's lock (a write may have come meanwhile). */
  private async removeIdle(appId: string, visitorIds: readonly string[], cutoff: number): Promise<number> {
    return await this.store.db.transaction().execute(async (trx) => {
      await lockKey(trx, this.store.dialect, visitorsLock(appId));
      const gone = await trx
        .deleteFrom("visitor_stores")
        .where("app_id", "=", appId)
        .where("visitor_id", "in", visitorIds)
        .where("updated_at", "<=", cutoff)
        .returning(["visitor_id", "bytes", "key_bytes"])
        .execute();
      if (gone.length === 0) return 0;
      await trx.deleteFrom("visitor_kv").where("app_id", "=", appId).where("visitor_id", "in", gone.map((g) => g.visitor_id)).execute();
      const freed = gone.reduce((sum, g) => sum + Number(g.bytes), 0);
      const freedKeys = gone.reduce((sum, g) => sum + Number(g.key_bytes), 0);
      await trx
        .updateTable("visitor_totals")
        .set((eb) => ({ bytes: eb("bytes", "-", freed), key_bytes: eb("key_bytes", "-", freedKeys) }))
        .where("app_id", "=", appId)
        .execute();
      return gone.length;
    });
  }

  private scope(s: VisitorStore) {
    return this.store.db.selectFrom("visitor_kv").where("app_id", "=", s.appId).where("visitor_id", "=", s.visitorId);
  }
}

/** The lock every change of an app's visitors' stores takes (and a recount, recount.ts). */
export const visitorsLock = (appId: string): string => `visitor-kv:${appId}`;

function groupBy(rows: readonly { app_id: string; visitor_id: string }[]): Map<string, string[]> {
  const byApp = new Map<string, string[]>();
  for (const { app_id, visitor_id } of rows) {
    const ids = byApp.get(app_id);
    if (ids === undefined) byApp.set(app_id, [visitor_id]);
    else ids.push(visitor_id);
  }
  return byApp;
}
