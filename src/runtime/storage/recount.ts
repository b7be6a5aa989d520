import { sql, type Kysely, type Transaction } from "kysely";
import type { Database, Store } from "../../store/index.ts";
import { bumpUsageRow, ensureUsageRow, lockKey, lockUsageRows } from "../../store/locks.ts";
import { KEY_COST_SQL } from "./limits.ts";
import { snapshotHeld } from "./snapshot-held.ts";
import { visitorsLock } from "./visitor-kv.ts";

/** What a store holds: its values' bytes and its keys' cost (limits.ts keyCost). */
export interface Totals {
  bytes: number;
  keyBytes: number;
}

/** One running total that did not match its rows: as it was kept, and as recounted. */
export interface Mended {
  appId: string;
  /** false: the app's own store; true: its visitors' stores (the totals are all of them together). */
  visitors: boolean;
  kept: Totals;
  counted: Totals;
}

/**
 * Recounts the running totals storage keeps beside the values (an app's `app_storage_usage`, its
 * visitors' `visitor_stores` and `visitor_totals`) from the rows themselves, and sets those that
 * differ. They can only drift through code that does not keep them, such as an instance from
 * before migration 032 or 033 writing beside new ones (src/store/README.md). Safe while the
 * service runs on PostgreSQL: each app is recounted under the lock its writers take, in one
 * transaction, so a write lands either before the count or after the new total. (On SQLite an
 * instance keeps what each app holds in memory as its only writer: the command refuses to run
 * beside one, cli.ts.) A first pass without locks picks the apps to recount; one whose total a
 * write in flight made look right then is left for the next recount. `only` limits it to one app.
 */
export async function recountTotals(store: Store, only?: string): Promise<Mended[]> {
  const mended: Mended[] = [];
  for (const appId of await driftedApps(store.db, only)) {
    const fixed = await unlessDeleted(store, appId, (trx) => recountApp(trx, store, appId));
    if (fixed !== null) mended.push(fixed);
  }
  for (const appId of await driftedVisitors(store.db, only)) {
    // The advisory lock before any row lock (locks.ts lockKey), the app's row included.
    const fixed = await unlessDeleted(store, appId, (trx) => recountVisitors(trx, appId), (trx) => lockKey(trx, store.dialect, visitorsLock(appId)));
    if (fixed !== null) mended.push(fixed);
  }
  return mended;
}

/**
 * Runs one app's recount in a transaction of its own, unless the app has been deleted since the
 * first pass: its rows went with it, and a total written for it would outlive it.
 */
async function unlessDeleted(store: Store, appId: string, work: (trx: Transaction<Database>) => Promise<Mended | null>, first?: (trx: Transaction<Database>) => Promise<void>): Promise<Mended | null> {
  return store.db.transaction().execute(async (trx) => {
    await first?.(trx);
    return (await holdApp(trx, store, appId)) ? work(trx) : null;
  });
}

/** Whether the app is still there; on PostgreSQL its row is held (shared) until the transaction ends, so its deletion waits. */
async function holdApp(trx: Transaction<Database>, store: Store, appId: string): Promise<boolean> {
  const query = trx.selectFrom("apps").select("id").where("id", "=", appId);
  return (await (store.dialect === "postgres" ? query.forShare() : query).executeTakeFirst()) !== undefined;
}

/** Sets the app's own totals to what its values and keys add up to, under its usage row's lock. */
async function recountApp(trx: Transaction<Database>, store: Store, appId: string): Promise<Mended | null> {
  if (store.dialect === "postgres") await lockUsageRows(trx, store.dialect, [appId]);
  else await ensureUsageRow(trx, appId);
  const kept = await keptTotals(trx, appId);
  const counted = await appTotals(trx, appId);
  if (same(kept, counted)) return null;
  await bumpUsageRow(trx, appId, counted);
  return { appId, visitors: false, kept, counted };
}

/** `and <column> = only`, or nothing. */
const onlyApp = (only: string | undefined, column: string) => (only === undefined ? sql`` : sql`and ${sql.ref(column)} = ${only}`);

const same = (a: Totals, b: Totals): boolean => a.bytes === b.bytes && a.keyBytes === b.keyBytes;

/** `where app_id = only`, or nothing. */
const whereApp = (only: string | undefined) => (only === undefined ? sql`` : sql`where app_id = ${only}`);

/**
 * Sums of each app's own values and keys (its KV rows and its blobs), or of `only`'s. Its bytes
 * count what its snapshots hold too (snapshot-held.ts), as its running total does.
 */
const appSums = (only?: string) => sql`select app_id, sum(size) as bytes, sum(key_cost) as key_bytes from (
    select app_id, size, ${sql.raw(KEY_COST_SQL)} as key_cost from app_kv ${whereApp(only)}
    union all select app_id, size, ${sql.raw(KEY_COST_SQL)} as key_cost from app_blobs ${whereApp(only)}
    union all select app_id, size, 0 as key_cost from (${snapshotHeld(only)}) snapshots
  ) held group by app_id`;

async function driftedApps(db: Kysely<Database>, only: string | undefined): Promise<string[]> {
  const rows = await sql<{ app_id: string }>`
    select ids.app_id from (select app_id from app_storage_usage union select app_id from app_kv union select app_id from app_blobs) ids
    left join app_storage_usage u on u.app_id = ids.app_id
    left join (${appSums(only)}) c on c.app_id = ids.app_id
    where (coalesce(u.bytes, 0) <> coalesce(c.bytes, 0) or coalesce(u.key_bytes, 0) <> coalesce(c.key_bytes, 0)) ${onlyApp(only, "ids.app_id")}
    order by ids.app_id`.execute(db);
  return rows.rows.map((row) => row.app_id);
}

async function keptTotals(db: Kysely<Database>, appId: string): Promise<Totals> {
  const row = await db.selectFrom("app_storage_usage").select(["bytes", "key_bytes"]).where("app_id", "=", appId).executeTakeFirst();
  return { bytes: Number(row?.bytes ?? 0), keyBytes: Number(row?.key_bytes ?? 0) };
}

async function appTotals(db: Kysely<Database>, appId: string): Promise<Totals> {
  const [row] = (await sql<{ bytes: unknown; key_bytes: unknown }>`${appSums(appId)}`.execute(db)).rows;
  return { bytes: Number(row?.bytes ?? 0), keyBytes: Number(row?.key_bytes ?? 0) };
}

/** Sums of each visitor's store of each app, or of `only`'s, and the store's last write. */
const visitorSums = (only?: string) =>
  sql`select app_id, visitor_id, sum(size) as bytes, sum(${sql.raw(KEY_COST_SQL)}) as key_bytes, max(updated_at) as updated_at from visitor_kv ${whereApp(only)} group by app_id, visitor_id`;

/** Apps some of whose visitors' totals (a store's, or all of them together) do not match their rows. */
async function driftedVisitors(db: Kysely<Database>, only: string | undefined): Promise<string[]> {
  const rows = await sql<{ app_id: string }>`
    select app_id from (
      select s.app_id from visitor_stores s
        left join (${visitorSums(only)}) c on c.app_id = s.app_id and c.visitor_id = s.visitor_id
        where s.bytes <> coalesce(c.bytes, 0) or s.key_bytes <> coalesce(c.key_bytes, 0)
      union
      select c.app_id from (${visitorSums(only)}) c
        left join visitor_stores s on s.app_id = c.app_id and s.visitor_id = c.visitor_id
        where s.app_id is null
      union
      select ids.app_id from (select app_id from visitor_totals union select app_id from visitor_kv) ids
        left join visitor_totals t on t.app_id = ids.app_id
        left join (select app_id, sum(bytes) as bytes, sum(key_bytes) as key_bytes from (${visitorSums(only)}) v group by app_id) c on c.app_id = ids.app_id
        where coalesce(t.bytes, 0) <> coalesce(c.bytes, 0) or coalesce(t.key_bytes, 0) <> coalesce(c.key_bytes, 0)
    ) drifted
    where 1 = 1 ${onlyApp(only, "app_id")}
    order by app_id`.execute(db);
  return rows.rows.map((row) => row.app_id);
}

/** Sets each of the app's visitors' stores that drifted, and their total, to what their rows hold (under the app's lock); null when none had. */
async function recountVisitors(trx: Kysely<Database>, appId: string): Promise<Mended | null> {
  const counted = (await sql<{ visitor_id: string; bytes: unknown; key_bytes: unknown; updated_at: unknown }>`${visitorSums(appId)}`.execute(trx)).rows;
  const stores = new Map(counted.map((row) => [row.visitor_id, { bytes: Number(row.bytes), keyBytes: Number(row.key_bytes), updatedAt: Number(row.updated_at) }]));
  const kept = new Map<string, Totals>();
  for (const row of await trx.selectFrom("visitor_stores").select(["visitor_id", "bytes", "key_bytes", "updated_at"]).where("app_id", "=", appId).execute()) {
    kept.set(row.visitor_id, { bytes: Number(row.bytes), keyBytes: Number(row.key_bytes) });
    // A store whose rows are all gone holds nothing; the sweep removes it when it idles out.
    if (!stores.has(row.visitor_id)) stores.set(row.visitor_id, { bytes: 0, keyBytes: 0, updatedAt: Number(row.updated_at) });
  }
  let drifted = false;
  for (const [visitorId, s] of stores) {
    const was = kept.get(visitorId);
    if (was !== undefined && same(was, s)) continue;
    drifted = true;
    await trx
      .insertInto("visitor_stores")
      .values({ app_id: appId, visitor_id: visitorId, bytes: s.bytes, key_bytes: s.keyBytes, updated_at: s.updatedAt })
      .onConflict((oc) => oc.columns(["app_id", "visitor_id"]).doUpdateSet({ bytes: s.bytes, key_bytes: s.keyBytes }))
      .execute();
  }
  const total = [...stores.values()].reduce((sum, s) => ({ bytes: sum.bytes + s.bytes, keyBytes: sum.keyBytes + s.keyBytes }), { bytes: 0, keyBytes: 0 });
  const row = await trx.selectFrom("visitor_totals").select(["bytes", "key_bytes"]).where("app_id", "=", appId).executeTakeFirst();
  const keptTotal = { bytes: Number(row?.bytes ?? 0), keyBytes: Number(row?.key_bytes ?? 0) };
  if (row !== undefined && same(keptTotal, total) && !drifted) return null;
  await trx
    .insertInto("visitor_totals")
    .values({ app_id: appId, bytes: total.bytes, key_bytes: total.keyBytes })
    .onConflict((oc) => oc.column("app_id").doUpdateSet({ bytes: total.bytes, key_bytes: total.keyBytes }))
    .execute();
  return { appId, visitors: true, kept: keptTotal, counted: total };
}
