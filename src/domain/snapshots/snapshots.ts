import { randomUUID } from "node:crypto";
import { sql, type ExpressionBuilder, type Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { bumpUsageRow, lockUsageRows, type Database, type Dialect } from "../../store/index.ts";
import { lockKey } from "../../store/locks.ts";
import type { SnapshotEntriesTable } from "../../store/schema/snapshots.ts";
import type { Actor } from "../access/access.ts";
import type { Apps } from "../apps/apps.ts";
import { UUID } from "../ids.ts";
import { APP_CAP_BYTES, keyCost, snapshotBytes, type AppStorage } from "../../runtime/index.ts";
import { ContentObjects, readObject } from "../../blobs/objects.ts";

/** DECISIONS §9: the newest 10 snapshots of an app are kept. */
export const SNAPSHOTS_KEPT = 10;

/**
 * Values are shared by every snapshot that holds the same bytes, whatever the app, and a prune
 * deletes those no snapshot refers to. On PostgreSQL a prune beside a snapshot being taken did
 * not see that snapshot's uncommitted entries, so it deleted a value the snapshot had found
 * already there and was about to refer to: the snapshot committed with an entry whose value was
 * gone. Snapshots being taken hold this key shared, side by side; a prune holds it alone.
 */
const SHARED_VALUES = "snapshot-values";

export interface SnapshotView {
  id: string;
  createdAt: number;
  revision: number;
  keys: number;
  bytes: number;
}

export interface ChangedKey {
  store: "kv" | "blob";
  key: string;
}

/** What a restore would do to the app's data (DECISIONS §9: `dry_run`). */
export interface DataChanges {
  added: ChangedKey[];
  changed: ChangedKey[];
  removed: ChangedKey[];
  /** Bytes the restore writes back: the snapshot's values. */
  bytes: number;
}

type Entry = Omit<SnapshotEntriesTable, "snapshot_id">;

/**
 * Data snapshots (issue 16): an app's KV values and blobs captured by content, restored together
 * with a revision's code in one transaction (versions.ts). Content-addressed: each value is kept
 * once by hash, so capturing unchanged data again costs only index rows. Snapshots count against
 * the app's storage cap: the distinct bytes they hold (snapshot-held.ts) are part of its running
 * total, so every write's check counts them; taking one past the cap is refused, pruning gives
 * room back.
 */
export class Snapshots {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly storage: AppStorage,
    /** S3: blobs held as objects are captured and restored by their hash, never read (null: none). */
    private readonly objects: ContentObjects | null = null,
  ) {}

  async create(appId: string, actor: Actor): Promise<SnapshotView> {
    const { app } = await this.apps.load(appId, actor, "source:write");
    const now = this.clock.now();
    const id = randomUUID();
    // The objects this snapshot will refer to stay out of the object sweep's reach meanwhile.
    await this.objects?.touchApp(app.id);
    const view = await this.db.transaction().execute(async (trx) => {
      await lockKey(trx, this.dialect, SHARED_VALUES, "shared");
      // Then the app's usage row, as its writers take it: what the snapshot adds and what they
      // write are checked against the cap one after the other, never both against the old total.
      await lockUsageRows(trx, this.dialect, [app.id]);
      const live = await liveEntries(trx, app.id);
      const before = await snapshotBytes(trx, app.id);
      const bytes = live.reduce((sum, e) => sum + e.size, 0);
      await trx.insertInto("app_snapshots").values({ id, app_id: app.id, revision: app.revision, keys: live.length, bytes, created_at: now }).execute();
      // In hash order: two snapshots inserting the same new values wait for each other in one
      // order, never each for the other (a deadlock on PostgreSQL's unique index).
      const values = new Map(live.map((e) => [e.hash, e]));
      for (const [hash, e] of [...values].sort(([a], [b]) => (a < b ? -1 : 1))) {
        // A blob held as an object is captured by its hash: the value refers to the same object.
        const value = e.data === null ? { data: EMPTY, object_hash: hash } : { data: e.data };
        await trx.insertInto("snapshot_values").values({ hash, size: e.size, ...value }).onConflict((oc) => oc.column("hash").doNothing()).execute();
      }
      for (const e of live) {
        await trx.insertInto("snapshot_entries").values({ snapshot_id: id, store: e.store, key: e.key, hash: e.hash, size: e.size, content_type: e.contentType }).execute();
      }
      // The app's total counts its values and what its snapshots held before this one.
      const usage = await trx.selectFrom("app_storage_usage").select("bytes").where("app_id", "=", app.id).executeTakeFirst();
      const after = await snapshotBytes(trx, app.id);
      const total = Number(usage?.bytes ?? 0) - before + after;
      const held = this.storage.roomHeld(app.id);
      // A snapshot that holds nothing new is never refused: past the cap after a restore (below),
      // taking such snapshots is how the old ones are pruned and the room comes back.
      if (after > before && total + held > APP_CAP_BYTES) {
        throw apiError("storage_limit_exceeded", `the app's data and its snapshots would hold ${total} bytes${held > 0 ? ` while running operations hold ${held} more` : ""}, past its ${APP_CAP_BYTES}-byte storage cap; delete data or wait for old snapshots to be pruned`, {
          max: APP_CAP_BYTES,
        });
      }
      await addBytes(trx, app.id, after - before);
      return { id, createdAt: now, revision: app.revision, keys: live.length, bytes };
    });
    this.storage.replaced(app.id, []);
    await this.prune(app.id);
    return view;
  }

  async list(appId: string, actor: Actor): Promise<SnapshotView[]> {
    const { app } = await this.apps.load(appId, actor, "source:write");
    const rows = await this.db.selectFrom("app_snapshots").selectAll().where("app_id", "=", app.id).orderBy("created_at", "desc").orderBy("id", "desc").execute();
    return rows.map((r) => ({ id: r.id, createdAt: Number(r.created_at), revision: Number(r.revision), keys: Number(r.keys), bytes: Number(r.bytes) }));
  }

  /** The keys a restore of `snapshotId` would add, change and remove, and the bytes it writes. */
  async changes(appId: string, snapshotId: string, db: Kysely<Database> = this.db): Promise<DataChanges> {
    const wanted = await this.entries(db, appId, snapshotId);
    const live = new Map((await liveEntries(db, appId)).map((e) => [`${e.store}\u0000${e.key}`, e.hash]));
    const out: DataChanges = { added: [], changed: [], removed: [], bytes: 0 };
    const seen = new Set<string>();
    for (const e of wanted) {
      const id = `${e.store}\u0000${e.key}`;
      seen.add(id);
      out.bytes += Number(e.size);
      const now = live.get(id);
      if (now === undefined) out.added.push({ store: e.store, key: e.key });
      else if (now !== e.hash) out.changed.push({ store: e.store, key: e.key });
    }
    for (const id of live.keys()) {
      if (seen.has(id)) continue;
      const [store, key] = id.split("\u0000") as ["kv" | "blob", string];
      out.removed.push({ store, key });
    }
    return out;
  }

  /**
   * Puts the snapshot's values back in place of the app's, inside the caller's transaction (the
   * restore's, with the code). Returns the KV keys that changed; call `restored` after commit.
   * Never refused for the cap: the values it brings back are already counted in what the
   * snapshots hold, and refusing would leave no way back to them (their room is freed only by
   * newer snapshots). Restoring an old snapshot beside newer ones can leave the app past its cap;
   * its writes are then refused until snapshots of what it holds push the others out.
   */
  async restoreInto(trx: Kysely<Database>, appId: string, snapshotId: string): Promise<string[]> {
    // The app's usage row first, as every write of its values takes it first (PostgreSQL): a write
    // committed between this restore's delete and its totals would keep its row uncounted, and one
    // rewriting a key this deletes would wait on the delete while the delete waited on it.
    await lockUsageRows(trx, this.dialect, [appId]);
    const changes = await this.changes(appId, snapshotId, trx);
    const wanted = await this.entries(trx, appId, snapshotId);
    const now = this.clock.now();
    await trx.deleteFrom("app_kv").where("app_id", "=", appId).execute();
    await trx.deleteFrom("app_blobs").where("app_id", "=", appId).execute();
    for (const e of wanted) {
      const value = await trx.selectFrom("snapshot_values").select(["data", "object_hash"]).where("hash", "=", e.hash).executeTakeFirstOrThrow();
      const data = Buffer.from(value.data);
      const size = Number(e.size);
      // Values are kept by content whatever holds them: a KV value's bytes may have been captured
      // first as a blob's object (the same sha256), and are read from it.
      if (e.store === "kv") {
        const text = (value.object_hash === null ? data : await readObject(this.objects, value.object_hash)).toString("utf8");
        await trx.insertInto("app_kv").values({ app_id: appId, key: e.key, value: text, size, updated_at: now }).execute();
      }
      // A blob held as an object goes back as a reference to it (the snapshot's value holds it meanwhile).
      else await trx.insertInto("app_blobs").values({ app_id: appId, key: e.key, data, object_hash: value.object_hash, content_type: e.content_type ?? "application/octet-stream", size, updated_at: now }).execute();
    }
    const bytes = wanted.reduce((sum, e) => sum + Number(e.size), 0);
    const keyBytes = wanted.reduce((sum, e) => sum + keyCost(e.key), 0);
    // The data version goes on counting (migration 020): every other instance's caches of this
    // app learn that its values changed. The total counts the snapshots too, which stay as they were.
    await bumpUsageRow(trx, appId, { bytes: bytes + (await snapshotBytes(trx, appId)), keyBytes });
    return [...changes.added, ...changes.changed, ...changes.removed].filter((c) => c.store === "kv").map((c) => c.key);
  }

  /**
   * Before a restore's transaction: the snapshot's objects stay out of the object sweep's reach
   * until the rows it writes back refer to them (a prune beside it may drop the snapshot's values).
   */
  async beforeRestore(snapshotId: string): Promise<void> {
    if (this.objects === null || !UUID.test(snapshotId)) return;
    await this.objects.touchAll(
      await this.db
        .selectFrom("snapshot_values")
        .select(["object_hash", "size"])
        .where("object_hash", "is not", null)
        .where("hash", "in", this.db.selectFrom("snapshot_entries").select("hash").where("snapshot_id", "=", snapshotId))
        .execute(),
    );
  }

  /** After a restore committed: caches and live streams learn what changed. */
  restored(appId: string, kvKeys: readonly string[]): void {
    this.storage.replaced(appId, kvKeys);
  }

  /** The snapshot's entries: 400 for a malformed id, 404 for one this app does not have. */
  private async entries(db: Kysely<Database>, appId: string, snapshotId: string) {
    if (!UUID.test(snapshotId)) throw apiError("invalid_id", `${snapshotId} is not a snapshot id (a UUID)`);
    const snapshot = await db.selectFrom("app_snapshots").select("id").where("id", "=", snapshotId).where("app_id", "=", appId).executeTakeFirst();
    if (snapshot === undefined) throw apiError("not_found", `this app has no snapshot ${snapshotId}`);
    return db.selectFrom("snapshot_entries").select(["store", "key", "hash", "size", "content_type"]).where("snapshot_id", "=", snapshotId).orderBy("store").orderBy("key").execute();
  }

  /** Keeps the newest SNAPSHOTS_KEPT and sweeps values no snapshot refers to any more. */
  private async prune(appId: string): Promise<void> {
    const old = await this.db.selectFrom("app_snapshots").select("id").where("app_id", "=", appId).orderBy("created_at", "desc").orderBy("id", "desc").offset(SNAPSHOTS_KEPT).limit(1000).execute();
    if (old.length === 0) return;
    await this.sweeping({ appId, ids: old.map((o) => o.id) });
    this.storage.replaced(appId, []);
  }

  /**
   * Deletes the values no snapshot refers to any more (an hourly job). A deleted or reaped app's
   * snapshots go with it, by cascade, but the values only they held stayed: an anonymous app could
   * fill its cap, snapshot it and be reaped, and its bytes stayed on disk for good.
   */
  async sweepValues(): Promise<number> {
    return this.sweeping(null);
  }

  /**
   * In one transaction that holds the values to itself: the app's snapshots `dropping` go, and
   * what they alone held leaves its total; then the values nothing refers to go.
   */
  private sweeping(dropping: { appId: string; ids: readonly string[] } | null): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      await lockKey(trx, this.dialect, SHARED_VALUES);
      if (dropping !== null) {
        await lockUsageRows(trx, this.dialect, [dropping.appId]);
        const before = await snapshotBytes(trx, dropping.appId);
        await trx.deleteFrom("app_snapshots").where("id", "in", dropping.ids).where("app_id", "=", dropping.appId).execute();
        await addBytes(trx, dropping.appId, (await snapshotBytes(trx, dropping.appId)) - before);
      }
      const unreferenced = (eb: ExpressionBuilder<Database, "snapshot_values">) =>
        eb.not(eb.exists(eb.selectFrom("snapshot_entries").select("snapshot_entries.hash").whereRef("snapshot_entries.hash", "=", "snapshot_values.hash")));
      const result = await trx.deleteFrom("snapshot_values").where(unreferenced).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

/**
 * The app's live values by content: KV values' JSON text as UTF-8, blobs as they are. A blob held
 * as an object (S3) comes as its hash alone (`data` null): the sha256 of its bytes, as here.
 */
async function liveEntries(db: Kysely<Database>, appId: string): Promise<(Pick<Entry, "store" | "key" | "hash" | "size"> & { data: Buffer | null; contentType: string | null })[]> {
  const kv = await db.selectFrom("app_kv").select(["key", "value"]).where("app_id", "=", appId).execute();
  const blobs = await db.selectFrom("app_blobs").select(["key", "data", "object_hash", "size", "content_type"]).where("app_id", "=", appId).execute();
  const held = (key: string, data: Buffer, store: "kv" | "blob", contentType: string | null) => ({ store, key, data, hash: digest(data), size: data.length, contentType });
  return [
    ...kv.map((r) => held(r.key, Buffer.from(r.value, "utf8"), "kv", null)),
    ...blobs.map((r) =>
      r.object_hash === null ? held(r.key, Buffer.from(r.data), "blob", r.content_type) : { store: "blob" as const, key: r.key, data: null, hash: r.object_hash, size: Number(r.size), contentType: r.content_type },
    ),
  ];
}

const EMPTY = Buffer.alloc(0);

/**
 * Adds to the app's total what its snapshots now hold more (or less), making its row if it has
 * none, and bumps its data version: another instance's usage ledger learns the new total.
 */
async function addBytes(trx: Kysely<Database>, appId: string, delta: number): Promise<void> {
  if (delta === 0) return;
  await trx
    .insertInto("app_storage_usage")
    .values({ app_id: appId, bytes: delta })
    .onConflict((oc) => oc.column("app_id").doUpdateSet({ bytes: sql<number>`app_storage_usage.bytes + ${delta}`, data_version: sql<number>`app_storage_usage.data_version + 1` }))
    .execute();
}

// The same hash an object is named by (ContentObjects), so a value captured from a blob held as
// an object and one captured from bytes in a row are one value.
const digest = (data: Buffer): string => ContentObjects.hashOf(data);
