import { Migrator, sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ManualClock, DAY } from "../src/config/clock.ts";
import { ApiError } from "../src/errors/index.ts";
import { keyCost } from "../src/runtime/storage/limits.ts";
import { VisitorKv, VISITOR_IDLE_MS, type VisitorStore } from "../src/runtime/storage/visitor-kv.ts";
import { migrationProvider } from "../src/store/migrations/index.ts";
import type { Store } from "../src/store/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { queryRecorder, unkeyedReads } from "./helpers/query-plans.ts";
import { insertApp, openTestStore, type TestStore } from "./helpers/store.ts";

/** What the running totals say, and what the stored values add up to, per visitor and per app: `[bytes, key bytes]`. */
async function totals(store: Store): Promise<{ kept: Record<string, [number, number]>; summed: Record<string, [number, number]> }> {
  const kept: Record<string, [number, number]> = {};
  const summed: Record<string, [number, number]> = {};
  for (const row of await store.db.selectFrom("visitor_stores").select(["app_id", "visitor_id", "bytes", "key_bytes"]).execute()) kept[`${row.app_id}/${row.visitor_id}`] = [Number(row.bytes), Number(row.key_bytes)];
  for (const row of await store.db.selectFrom("visitor_totals").select(["app_id", "bytes", "key_bytes"]).execute()) kept[row.app_id] = [Number(row.bytes), Number(row.key_bytes)];
  for (const row of await store.db.selectFrom("visitor_kv").select(["app_id", "visitor_id", "key", "size"]).execute()) {
    const add = (at: string) => {
      const [bytes, keys] = summed[at] ?? [0, 0];
      summed[at] = [bytes + Number(row.size), keys + keyCost(row.key)];
    };
    add(`${row.app_id}/${row.visitor_id}`);
    add(row.app_id);
  }
  // A store emptied by deletes keeps its row (at 0) until the sweep: as good as no row.
  for (const [key, [bytes, keys]] of Object.entries(kept)) if (bytes === 0 && keys === 0 && summed[key] === undefined) delete kept[key];
  return { kept, summed };
}

async function refusal(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
  } catch (err) {
    if (err instanceof ApiError) return `${err.status} ${err.kind}`;
    throw err;
  }
  return "written";
}

const write = (key: string, bytes: number) => ({ key, value: "x".repeat(bytes) });

describeEachDialect("visitors' stores: running totals instead of a sum per write (migration 032)", (dialect) => {
  const recorder = queryRecorder();
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(dialect, { log: recorder.log });
  });
  afterAll(async () => store?.dispose());

  it("every write, delete and sweep leaves the totals equal to what the stores hold", async () => {
    const kv = new VisitorKv(store, clock);
    const apps = [await insertApp(store), await insertApp(store)];
    const stores: VisitorStore[] = apps.flatMap((appId) => ["v1", "v2", "v3"].map((visitorId) => ({ appId, visitorId })));
    // A fixed sequence from a small linear congruential generator: the same steps every run.
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let step = 0; step < 240; step++) {
      const s = stores[next(stores.length)] as VisitorStore;
      const roll = next(10);
      if (roll < 6) await kv.commit(s, Array.from({ length: 1 + next(3) }, () => write(`k${next(6)}`, next(40))));
      else if (roll < 9) await kv.delete(s, `k${next(6)}`);
      else {
        clock.advance(200 * DAY);
        await kv.sweep();
      }
      const { kept, summed } = await totals(store);
      expect(kept, `after step ${step}`).toEqual(summed);
    }
    expect(Object.keys((await totals(store)).summed).length).toBeGreaterThan(0);
  });

  it("refuses a write past a visitor's cap, or past all of the app's visitors' cap, and keeps what was there", async () => {
    const kv = new VisitorKv(store, clock, { store: 100, visitors: 250, keys: 10_000 });
    const appId = await insertApp(store);
    const [ada, bea, cy] = ["ada", "bea", "cy"].map((visitorId) => ({ appId, visitorId })) as [VisitorStore, VisitorStore, VisitorStore];
    await kv.commit(ada, [write("a", 90)]);
    expect(await refusal(() => kv.commit(ada, [write("b", 11)]))).toBe("413 storage_full");
    // Replacing a value counts what it replaces.
    await kv.commit(ada, [write("a", 95)]);
    await kv.commit(bea, [write("a", 100)]);
    expect(await refusal(() => kv.commit(cy, [write("a", 56)]))).toBe("413 storage_full");
    expect(await kv.get(cy, "a")).toBeNull();
    expect((await kv.get(ada, "a"))?.length).toBe(95);
    await kv.commit(cy, [write("a", 55)]);
    expect(await kv.delete(ada, "a")).toBe(true);
    expect(await kv.delete(ada, "a")).toBe(false);
    await kv.commit(cy, [write("b", 45)]);
    const { kept, summed } = await totals(store);
    expect(kept[appId]).toEqual([200, 3 * keyCost("a")]);
    expect(summed[appId]).toEqual(kept[appId]);
  });

  it("counts each new key's length and 64 bytes against the keys' cap, a visitor's and all of them together", async () => {
    const cost = keyCost("k".repeat(100));
    const kv = new VisitorKv(store, clock, { store: 10_000, visitors: 10_000, keys: 3 * cost });
    const appId = await insertApp(store);
    const [ada, bea] = [{ appId, visitorId: "ada" }, { appId, visitorId: "bea" }];
    const key = (c: string) => c.repeat(100);
    await kv.commit(ada, [write(key("a"), 1), write(key("b"), 1)]);
    expect(await refusal(() => kv.commit(ada, [write(key("c"), 1), write(key("d"), 1)]))).toBe("413 storage_full");
    // Writing a key again costs no more key bytes.
    await kv.commit(ada, [write(key("a"), 5), write(key("b"), 5)]);
    await kv.commit(bea, [write(key("a"), 1)]);
    expect(await refusal(() => kv.commit(bea, [write(key("b"), 1)]))).toBe("413 storage_full");
    expect(await kv.get(bea, key("b"))).toBeNull();
    expect(await kv.delete(ada, key("a"))).toBe(true);
    await kv.commit(bea, [write(key("b"), 1)]);
    const { kept, summed } = await totals(store);
    expect(kept[appId]).toEqual([7, 3 * cost]);
    expect(summed[appId]).toEqual(kept[appId]);
  });

  it("a write reads the keys it writes and its two total rows, however much the app's visitors hold", async () => {
    const kv = new VisitorKv(store, clock);
    const appId = await insertApp(store);
    const now = clock.now();
    for (let visitor = 0; visitor < 200; visitor++) {
      const rows = Array.from({ length: 100 }, (_, k) => ({ app_id: appId, visitor_id: `seeded-${visitor}`, key: `k${k}`, value: "1", size: 1, updated_at: now }));
      await store.db.insertInto("visitor_kv").values(rows).execute();
    }
    if (dialect === "postgres") await sql`analyze`.execute(store.db);
    const visitor = { appId, visitorId: "seeded-7" };
    const queries = await recorder.record(() => kv.commit(visitor, [write("k1", 3), write("new", 4)]));
    expect(queries.some((q) => /visitor_kv/.test(q.sql))).toBe(true);
    const reads = [];
    // PostgreSQL rightly reads a table of a few rows whole: its total rows are checked on SQLite,
    // whose plans do not depend on what a table holds.
    const totalRows: [string, string[]][] = [["visitor_stores", ["app_id", "visitor_id"]], ["visitor_totals", ["app_id"]]];
    const keyed: [string, string[]][] = [["visitor_kv", ["app_id", "visitor_id", "key"]], ...(dialect === "sqlite" ? totalRows : [])];
    for (const q of queries) {
      for (const [table, key] of keyed) {
        reads.push(...(await unkeyedReads(store.db, dialect, q, table, key)).map((read) => `${read}: ${q.sql}`));
      }
    }
    expect(reads).toEqual([]);
  });

  it("the sweep removes a store idle for a year, and not one written since", async () => {
    const kv = new VisitorKv(store, clock);
    // The stores earlier tests left go first, so the count below is this test's.
    clock.advance(VISITOR_IDLE_MS + DAY);
    await kv.sweep();
    const appId = await insertApp(store);
    const [old, recent] = [{ appId, visitorId: "old" }, { appId, visitorId: "recent" }];
    await kv.commit(old, [write("a", 5), write("b", 6)]);
    await kv.commit(recent, [write("a", 7)]);
    clock.advance(VISITOR_IDLE_MS - DAY);
    await kv.commit(recent, [write("b", 1)]);
    clock.advance(2 * DAY);
    expect(await kv.sweep()).toBe(1);
    expect([await kv.get(old, "a"), await kv.get(recent, "a")]).toEqual([null, "x".repeat(7)]);
    const { kept, summed } = await totals(store);
    expect(kept[appId]).toEqual([8, 2 * keyCost("a")]);
    expect(summed[appId]).toEqual(kept[appId]);
  });
});

describeEachDialect("migration 032 fills visitors' totals from the values already stored", (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(dialect, { migrate: false });
  });
  afterAll(async () => store?.dispose());

  it("a row per visitor with its bytes and last write, a row per app with all of them", async () => {
    const migrator = new Migrator({ db: store.db, provider: migrationProvider(dialect) });
    expect((await migrator.migrateTo("031-blob-objects")).error).toBeUndefined();
    const appId = await insertApp(store);
    const row = (visitor_id: string, key: string, size: number, updated_at: number) => ({ app_id: appId, visitor_id, key, value: "x".repeat(size), size, updated_at });
    await store.db.insertInto("visitor_kv").values([row("ada", "a", 3, 10), row("ada", "b", 4, 30), row("bea", "a", 5, 20)]).execute();
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const stores = await store.db.selectFrom("visitor_stores").select(["visitor_id", "bytes", "key_bytes", "updated_at"]).orderBy("visitor_id").execute();
    expect(stores.map((s) => [s.visitor_id, Number(s.bytes), Number(s.key_bytes), Number(s.updated_at)])).toEqual([
      ["ada", 7, 2 * keyCost("a"), 30],
      ["bea", 5, keyCost("a"), 20],
    ]);
    const all = await store.db.selectFrom("visitor_totals").select(["bytes", "key_bytes"]).where("app_id", "=", appId).executeTakeFirstOrThrow();
    expect([Number(all.bytes), Number(all.key_bytes)]).toEqual([12, 3 * keyCost("a")]);
  });
});
