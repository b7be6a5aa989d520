import { sql, type Transaction } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { ApiError } from "../../errors/index.ts";
import { appGone, ensureUsageRow, lockForWrite, lockUsageRows, PreparedQuery, TurnBatch, WriteBatcher, type Database, type Store } from "../../store/index.ts";
import { readObject, type ContentObjects } from "../../blobs/objects.ts";
import { DataVersions } from "./data-versions.ts";
import { KvSetBatch } from "./kv-set-batch.ts";
import { UsageLedger, type SeenUsage, type WriteLease } from "./ledger.ts";
import { APP_CAP_BYTES, checkContentType, checkKey, checkValueSize, encodeCursor, keyCost, keysFull, KEYS_CAP_BYTES, keyStartsWith, lastWrites, parseList, storageFull, type ListOptions, type ListPage } from "./limits.ts";

type ValueTable = "app_kv" | "app_blobs";

/** The space query's `old`: null (or no row at all) when the key holds no value yet. */
const isNew = (old: number | null | undefined): boolean => old === null || old === undefined;
const EMPTY = Buffer.alloc(0);
/** Apps whose values one orphan sweep removes; the next run takes any more. */
const ORPHAN_SWEEP_BATCH = 500;

/** One KV write: the value as the binding serialized it (JSON text). */
export interface KvWrite {
  key: string;
  value: string;
}

interface Sized {
  key: string;
  size: number;
}

/** The size of the value a write replaces, if any. */
function oldSizeQuery(table: ValueTable) {
  return new PreparedQuery(2, (db, appId: string, key: string) => db.selectFrom(table).select("size").where("app_id", "=", appId).where("key", "=", key));
}

/**
 * A write's first check in one statement: the app's usage (null: no row yet), what its keys cost,
 * and the size of the value it replaces (null: none, a new key). `appId` thrice: a prepared
 * argument is used once.
 */
function spaceQuery(table: ValueTable) {
  return new PreparedQuery(4, (db, appId: string, sameAppId: string, againAppId: string, key: string) =>
    db.selectNoFrom((eb) => [
      eb.selectFrom("app_storage_usage").select("bytes").where("app_id", "=", appId).as("used"),
      eb.selectFrom("app_storage_usage").select("key_bytes").where("app_id", "=", sameAppId).as("key_bytes"),
      eb.selectFrom(table).select("size").where("app_id", "=", againAppId).where("key", "=", key).as("old"),
    ]),
  );
}

export interface StoredBlob {
  data: Buffer;
  contentType: string;
  size: number;
}

/**
 * An app's KV values and blobs (DECISIONS §4). Both share the 10 MiB value cap and the 100 MiB
 * app cap; every write runs in one transaction under the app's usage-row lock, so no pair of
 * concurrent writes can pass the cap together and the running total stays exact.
 */
export class AppStorage {
  /**
   * True on SQLite, where this instance is the only writer: it may cache reads and hold room
   * for running ops (leases) in memory, since no other instance's writes can go around it.
   */
  readonly soleWriter: boolean;
  /** PostgreSQL: which apps' cached reads another instance's writes have outdated. */
  readonly dataVersions = new DataVersions();
  private readonly batcher: WriteBatcher<{ appId: string; version: number }[]>;
  private readonly ledger: UsageLedger;
  private readonly kvSets: KvSetBatch;
  /** PostgreSQL: the op calls of one turn read their apps' usage rows together (seenUsage). */
  private readonly usageRows: TurnBatch<SeenUsage>;
  private readonly changeHooks: ((appId: string, key: string) => void)[] = [];
  // The queries every KV call of an op runs, compiled once for this store (see PreparedQuery).
  private readonly q = {
    kvGet: new PreparedQuery(2, (db, appId: string, key: string) => db.selectFrom("app_kv").select("value").where("app_id", "=", appId).where("key", "=", key)),
    usage: new PreparedQuery(1, (db, appId: string) => db.selectFrom("app_storage_usage").select("bytes").where("app_id", "=", appId)),
    // PostgreSQL only (seenUsage): one text for any number of apps, prepared once per connection.
    usageRows: new PreparedQuery(1, (db, appIds: string[]) => db.selectFrom("app_storage_usage").select(["app_id", "bytes", "data_version"]).where(sql<boolean>`app_id = any(${appIds}::text[])`)),
    addUsage: new PreparedQuery(3, (db, delta: number, keyDelta: number, appId: string) =>
      db
        .updateTable("app_storage_usage")
        .set({ bytes: sql<number>`bytes + ${delta}`, key_bytes: sql<number>`key_bytes + ${keyDelta}` })
        .where("app_id", "=", appId),
    ),
    oldSize: { app_kv: oldSizeQuery("app_kv"), app_blobs: oldSizeQuery("app_blobs") },
    space: { app_kv: spaceQuery("app_kv"), app_blobs: spaceQuery("app_blobs") },
    kvUpsert: new PreparedQuery(5, (db, appId: string, key: string, value: string, size: number, now: number) =>
      db
        .insertInto("app_kv")
        .values({ app_id: appId, key, value, size, updated_at: now })
        .onConflict((oc) => oc.columns(["app_id", "key"]).doUpdateSet((eb) => ({ value: eb.ref("excluded.value"), size: eb.ref("excluded.size"), updated_at: eb.ref("excluded.updated_at") }))),
    ),
  };

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    /** S3: blob values are objects there, their rows holding only the hash (null: bytes in the row). */
    private readonly objects: ContentObjects | null = null,
    /** What the app's keys may cost together (tests lower it to reach it). */
    private readonly keysCap = KEYS_CAP_BYTES,
  ) {
    this.batcher = new WriteBatcher(
      store,
      (trx, appIds) => lockForWrite(trx, store.dialect, appIds),
      (bumped) => {
        for (const { appId, version } of bumped) this.dataVersions.recordOwn(appId, version);
      },
    );
    this.soleWriter = store.dialect === "sqlite";
    this.ledger = new UsageLedger(this.soleWriter, (appId) => this.usage(appId));
    this.kvSets = new KvSetBatch(store, clock, keysCap);
    this.usageRows = new TurnBatch(async (appIds) => {
      const rows = (await this.q.usageRows.execute(store.db, appIds)).rows;
      return new Map(rows.map((row) => [row.app_id, { used: Number(row.bytes), version: Number(row.data_version) }]));
    });
  }

  /**
   * PostgreSQL: the app's usage and data version as they stand now, for a call about to run code
   * that imports KV. Read per call, not with the app's row: that row may be a cached read (kept
   * until a watched row changes, and values are not watched), while a write another instance
   * acknowledged must reach this call's reads (DataVersions) and room (UsageLedger).
   */
  async seenUsage(appId: string): Promise<SeenUsage> {
    return (await this.usageRows.load(appId)) ?? { used: 0, version: 0 };
  }

  /**
   * Holds up to `max` bytes of the app's room for one op's writes until released; null when
   * there is no room or usage is not known yet (it is learnt for next time). On PostgreSQL the
   * usage is the one the call read with its app (`seen`; none without it): see UsageLedger.
   * Every other write of this instance leaves the held room free.
   */
  lease(appId: string, max: number, seen?: SeenUsage): WriteLease | null {
    return this.ledger.lease(appId, max, seen);
  }

  /** Room this instance's running ops hold in the app's cap (leases): anything else that grows the app's storage must leave it free. */
  roomHeld(appId: string): number {
    return this.ledger.heldBesides(appId, null);
  }

  /** Called after each committed KV write or delete (live `data` events). */
  onKvChange(hook: (appId: string, key: string) => void): void {
    this.changeHooks.push(hook);
  }

  private changed(appId: string, key: string): void {
    for (const hook of this.changeHooks) hook(appId, key);
  }

  async kvGet(appId: string, key: string): Promise<string | null> {
    const row = await this.q.kvGet.takeFirst(this.store.db, appId, checkKey(key));
    return row?.value ?? null;
  }

  /** `json` is the value as the binding serialized it; its byte length is what counts. */
  async kvSet(appId: string, key: string, json: string, lease: WriteLease | null = null): Promise<void> {
    await this.kvCommit(appId, [{ key, value: json }], lease);
  }

  /**
   * Commits several writes as one: all of them or none. The last write of a key wins, and the
   * cap is checked on what the app holds afterwards.
   */
  async kvCommit(appId: string, writes: readonly KvWrite[], lease: WriteLease | null = null): Promise<void> {
    const entries = lastWrites(writes);
    const [only] = entries;
    if (only === undefined) return;
    // PostgreSQL, one key: the whole write in one statement (migrations 021, 023) instead of five round trips.
    if (!this.soleWriter && entries.length === 1) {
      await this.kvSetInOneStatement(appId, only, lease);
    } else {
      await this.write("app_kv", appId, entries, lease, async (trx) => {
        const now = this.clock.now();
        for (const { key, value, size } of entries) await this.q.kvUpsert.execute(trx, appId, key, value, size, now);
      });
    }
    for (const { key } of entries) this.changed(appId, key);
  }

  /** The PostgreSQL function's write (see migration 021), its version recorded before it answers. */
  private kvSetInOneStatement(appId: string, entry: KvWrite & Sized, lease: WriteLease | null): Promise<void> {
    return this.dataVersions.ownWrite(appId, this.kvSetByFunction(appId, entry, lease));
  }

  /** Runs brickyard_kv_set under a cap lowered by the room other ops' leases hold (batched per turn); a refusal becomes `storage_full`. */
  private async kvSetByFunction(appId: string, entry: KvWrite & Sized, lease: WriteLease | null): Promise<void> {
    const held = this.ledger.heldBesides(appId, lease);
    const outcome = await this.kvSets.write({ appId, key: entry.key, value: entry.value, size: entry.size, keyCost: keyCost(entry.key), cap: APP_CAP_BYTES - held });
    if (outcome.written === false) storageFull(outcome.used, outcome.size, outcome.freed, held);
    if (outcome.written === "keys") keysFull(outcome.keyBytes, outcome.adding, this.keysCap);
    // Answered after its commit: the version is this instance's own before the writer hears back.
    this.dataVersions.recordOwn(appId, outcome.version);
    this.ledger.settle(appId, outcome.used, lease, entry.size, outcome.version);
  }

  async kvDelete(appId: string, key: string): Promise<boolean> {
    const deleted = await this.remove("app_kv", appId, checkKey(key));
    if (deleted) this.changed(appId, key);
    return deleted;
  }

  async kvList(appId: string, options: ListOptions): Promise<ListPage> {
    return this.list("app_kv", appId, options);
  }

  async blobPut(appId: string, key: string, data: Buffer, contentType: string, lease: WriteLease | null = null): Promise<void> {
    checkKey(key);
    checkValueSize(data.length);
    checkContentType(contentType);
    // The object is written before the row that refers to it commits (ContentObjects); a write the
    // cap will refuse is refused first, so an app at its cap cannot fill the bucket with objects.
    if (this.objects !== null) {
      const space = await this.q.space.app_blobs.takeFirst(this.store.db, appId, appId, appId, key);
      const [used, old] = [Number(space?.used ?? 0), Number(space?.old ?? 0)];
      if (used - old + data.length > APP_CAP_BYTES) storageFull(used, data.length, old);
      const [keyBytes, adding] = [Number(space?.key_bytes ?? 0), isNew(space?.old) ? keyCost(key) : 0];
      if (keyBytes + adding > this.keysCap) keysFull(keyBytes, adding, this.keysCap);
    }
    const objectHash = this.objects === null ? null : await this.objects.put(data);
    const stored = objectHash === null ? data : EMPTY;
    await this.write("app_blobs", appId, [{ key, size: data.length }], lease, async (trx) => {
      const now = this.clock.now();
      const row = { data: stored, object_hash: objectHash, content_type: contentType, size: data.length, updated_at: now };
      await trx
        .insertInto("app_blobs")
        .values({ app_id: appId, key, ...row })
        .onConflict((oc) => oc.columns(["app_id", "key"]).doUpdateSet(row))
        .execute();
    });
  }

  async blobGet(appId: string, key: string): Promise<StoredBlob | null> {
    const row = await this.store.db
      .selectFrom("app_blobs")
      .select(["data", "object_hash", "content_type", "size"])
      .where("app_id", "=", appId)
      .where("key", "=", checkKey(key))
      .executeTakeFirst();
    if (row === undefined) return null;
    const data = row.object_hash === null ? Buffer.from(row.data) : await readObject(this.objects, row.object_hash);
    return { data, contentType: row.content_type, size: Number(row.size) };
  }

  async blobDelete(appId: string, key: string): Promise<boolean> {
    return this.remove("app_blobs", appId, checkKey(key));
  }

  async blobList(appId: string, options: ListOptions): Promise<ListPage> {
    return this.list("app_blobs", appId, options);
  }

  /** Bytes that count against the app's cap (its values and what its snapshots hold), from the running counter. */
  async usage(appId: string): Promise<number> {
    const row = await this.q.usage.takeFirst(this.store.db, appId);
    return row === undefined ? 0 : Number(row.bytes);
  }

  /**
   * After something replaced an app's values wholesale in its own transaction (a snapshot
   * restore), or changed its total without a write (a snapshot taken or pruned): the usage ledger
   * relearns the total, and every key that changed is announced, so isolate caches drop them and
   * live streams see them.
   */
  replaced(appId: string, kvKeys: readonly string[]): void {
    this.ledger.forget(appId);
    for (const key of kvKeys) this.changed(appId, key);
  }

  /**
   * Values of apps that are gone: an op still running when its app was deleted may commit its
   * writes after the deletion removed the app's values, and a crash may come before they are
   * dropped again once its calls end. Every write makes the usage row again if it is gone
   * (`brickyard_kv_set`, `brickyard_kv_set_many` since migration 034, the batched writers'
   * `ensureUsageRow`), which is how they are found: one row per app, not a scan of every value.
   * Nothing reads them, since an app's id is never reused; this removes them (hourly job). On S3
   * their blobs' objects are then referred to by nothing, and the object sweep takes them.
   */
  async sweepOrphans(): Promise<number> {
    const orphans = await this.store.db
      .selectFrom("app_storage_usage")
      .select("app_id")
      .where(appGone("app_storage_usage"))
      .limit(ORPHAN_SWEEP_BATCH)
      .execute();
    let dropped = 0;
    for (const { app_id } of orphans) {
      // One app's failure (a lock timeout, a deadlock with a writer) leaves it for the next run, not the rest.
      dropped += await this.dropApp(app_id).then(
        () => 1,
        () => 0,
      );
    }
    return dropped;
  }

  /**
   * Removes every value of an app (app deletion). The usage row is locked first, as its writers
   * lock it: a write under way finishes and is removed with the rest; one that comes after goes
   * when the app's deletion drops its values again after its calls (context.ts), or at
   * `sweepOrphans`. Deleting the values first could deadlock with a writer that held the
   * usage row and was updating a value.
   */
  async dropApp(appId: string): Promise<void> {
    await this.store.db.transaction().execute(async (trx) => {
      await lockUsageRows(trx, this.store.dialect, [appId]);
      await trx.deleteFrom("app_kv").where("app_id", "=", appId).execute();
      await trx.deleteFrom("app_blobs").where("app_id", "=", appId).execute();
      await trx.deleteFrom("app_storage_usage").where("app_id", "=", appId).execute();
    });
    this.ledger.forget(appId);
  }

  private async write(table: ValueTable, appId: string, entries: readonly Sized[], lease: WriteLease | null, upsert: (trx: Transaction<Database>) => Promise<void>): Promise<void> {
    const [first, ...rest] = entries;
    if (first === undefined) return;
    await this.batched(appId, async (trx) => {
      const space = await this.q.space[table].takeFirst(trx, appId, appId, appId, first.key);
      // The app's first write makes its usage row.
      if ((space?.used ?? null) === null) await ensureUsageRow(trx, appId);
      const used = Number(space?.used ?? 0);
      const keyBytes = Number(space?.key_bytes ?? 0);
      let freed = Number(space?.old ?? 0);
      // A key with no value yet adds its cost; replacing a value costs no more key bytes.
      let adding = isNew(space?.old) ? keyCost(first.key) : 0;
      let size = first.size;
      for (const entry of rest) {
        const old = await this.q.oldSize[table].takeFirst(trx, appId, entry.key);
        if (old === undefined) adding += keyCost(entry.key);
        else freed += Number(old.size);
        size += entry.size;
      }
      const held = this.ledger.heldBesides(appId, lease);
      if (used - freed + size + held > APP_CAP_BYTES) storageFull(used, size, freed, held);
      if (keyBytes + adding > this.keysCap) keysFull(keyBytes, adding, this.keysCap);
      // An overwrite of the same size (a counter, a flag) leaves the totals as they were.
      if (size !== freed || adding !== 0) await this.q.addUsage.execute(trx, size - freed, adding, appId);
      this.ledger.settle(appId, used - freed + size, lease, size);
      await upsert(trx);
    });
  }

  /** A batched write; a batch that rolls back leaves the ledger's usage for the app unknown. */
  private async batched<T>(appId: string, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    try {
      return await this.dataVersions.ownWrite(appId, this.batcher.run(appId, work));
    } catch (error) {
      // A refusal settled nothing; anything else rolled the whole batch back.
      if (!(error instanceof ApiError)) this.ledger.forget(appId);
      throw error;
    }
  }

  /** The app's bytes used, under the batch's lock (lockForWrite); an app's first write makes its row. */
  private async lockUsage(trx: Transaction<Database>, appId: string): Promise<number> {
    const row = await this.q.usage.takeFirst(trx, appId);
    if (row !== undefined) return Number(row.bytes);
    await ensureUsageRow(trx, appId);
    return 0;
  }

  private async remove(table: ValueTable, appId: string, key: string): Promise<boolean> {
    return this.batched(appId, async (trx) => {
      const used = await this.lockUsage(trx, appId);
      const old = await trx.deleteFrom(table).where("app_id", "=", appId).where("key", "=", key).returning("size").executeTakeFirst();
      if (old === undefined) return false;
      this.ledger.settle(appId, used - Number(old.size), null, 0);
      await this.q.addUsage.execute(trx, -Number(old.size), -keyCost(key), appId);
      return true;
    });
  }

  private async list(table: ValueTable, appId: string, options: ListOptions): Promise<ListPage> {
    const { prefix, limit, after } = parseList(options);
    let query = this.store.db.selectFrom(table).select(["key", "size"]).where("app_id", "=", appId);
    if (prefix !== "") query = query.where(keyStartsWith(prefix));
    if (after !== null) query = query.where("key", ">", after);
    const rows = await query.orderBy("key").limit(limit + 1).execute();
    const page = rows.slice(0, limit).map((r) => ({ key: r.key, size: Number(r.size) }));
    const last = page[page.length - 1];
    return { keys: page, cursor: rows.length > limit && last !== undefined ? encodeCursor(last.key) : null };
  }
}
