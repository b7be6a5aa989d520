import { createHash } from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { Clock } from "../config/clock.ts";
import type { Database } from "../store/index.ts";
import type { BlobStore } from "./blob-store.ts";
import { BlobReadCache } from "./read-cache.ts";

/**
 * Unreferenced objects are left this long after their last touch: longer than any writer takes
 * between its touch and its commit (an upload, then one transaction), short enough that an app
 * overwriting its values leaves minutes of garbage, not hours.
 */
const OBJECT_GRACE_MS = 10 * 60 * 1000;
const SWEEP_BATCH = 500;
const TOUCH_BATCH = 500;
/** One sweep stops after this long; the next run goes on where it stopped. */
const SWEEP_BUDGET_MS = 60_000;

/**
 * Bytes kept as content-addressed objects in the blob store (when it is S3), the database keeping
 * only their sha256 (migration 031): app blob values, snapshots' captured blobs, build bundles.
 * Equal bytes are one object, whoever refers to it: a copy or a snapshot of an app shares the
 * app's objects, and a bundle built twice is one.
 *
 * Nothing is lost to a crash, and nothing is left that the sweep will not collect:
 * - a write touches the object's row (`blob_objects`) and commits that, then writes the object,
 *   then commits the row that refers to it; its acknowledgement comes after all three;
 * - an object nothing refers to goes at the sweep (every 5 minutes), once untouched for
 *   OBJECT_GRACE_MS (longer than any write takes between its touch and its commit).
 *   - PostgreSQL (instances side by side): the sweep deletes the row, under its lock, before the
 *     object and commits after: a writer touching the row meanwhile waits, then makes it anew and
 *     writes the object again after the delete.
 *   - SQLite (one instance, one connection): that transaction would hold the only connection
 *     through a request to S3, and every query of the service would wait on it. Instead the
 *     sweep marks the object as going (in memory: this process is the only writer), deletes the
 *     object, then the row if still untouched and unreferenced; a writer that touched the row
 *     waits out a mark it finds after its touch, then writes the object again. Killed between
 *     the two deletes, the row outlives its object and the next sweep takes it.
 */
export class ContentObjects {
  // Objects never change under their name, so what was read stays right on every instance.
  private readonly cache: BlobReadCache;
  /** SQLite: objects a sweep is deleting, each until its row is dealt with too. */
  private readonly going = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly store: BlobStore,
    private readonly clock: Clock,
    /** SQLite: this process is the only writer, and the sweep must not hold the one connection. */
    private readonly soleWriter = false,
  ) {
    this.cache = new BlobReadCache(store);
  }

  static hashOf(data: Buffer | string): string {
    return createHash("sha256").update(data).digest("hex");
  }

  /** Stores `data` as its object; answers the hash to refer to it by, in a commit that follows. */
  async put(data: Buffer | string): Promise<string> {
    const hash = ContentObjects.hashOf(data);
    await this.touch(hash, Buffer.byteLength(data));
    await this.store.put(keyOf(hash), typeof data === "string" ? Buffer.from(data) : data);
    return hash;
  }

  /** Marks an object that a commit about to be made will refer to (a restore's, a copy's), so no sweep takes it meanwhile. */
  async touch(hash: string, size: number): Promise<void> {
    await this.touchAll([{ object_hash: hash, size }]);
  }

  /** `touch` for every object `rows` name (rows naming none are skipped), a statement per TOUCH_BATCH objects. */
  async touchAll(rows: readonly { object_hash: string | null; size: number }[]): Promise<void> {
    // Each object once: one statement may not upsert a row twice (PostgreSQL refuses).
    const sizes = new Map<string, number>();
    for (const row of rows) if (row.object_hash !== null) sizes.set(row.object_hash, Number(row.size));
    const objects = [...sizes];
    const now = this.clock.now();
    for (let i = 0; i < objects.length; i += TOUCH_BATCH) {
      const values = objects.slice(i, i + TOUCH_BATCH).map(([hash, size]) => ({ hash, size, touched_at: now }));
      await this.db
        .insertInto("blob_objects")
        .values(values)
        .onConflict((oc) => oc.column("hash").doUpdateSet({ touched_at: now }))
        .execute();
    }
    // After the touch: a sweep that marked one of these before it may be deleting the object.
    for (const [hash] of objects) await this.going.get(hash);
  }

  /** `touch` for the objects an app's blob values refer to (a snapshot or a copy of them is about to). */
  async touchApp(appId: string): Promise<void> {
    await this.touchAll(await this.db.selectFrom("app_blobs").select(["object_hash", "size"]).where("app_id", "=", appId).where("object_hash", "is not", null).execute());
  }

  /** The object's bytes; throws when a row refers to an object the store does not have. */
  async get(hash: string): Promise<Buffer> {
    const data = await this.cache.get(keyOf(hash));
    if (data === null) throw new Error(`blob object ${hash} is missing from the blob store`);
    return data;
  }

  /** Removes objects nothing refers to, untouched for OBJECT_GRACE_MS, batch after batch within SWEEP_BUDGET_MS; how many went. */
  async sweep(): Promise<number> {
    const started = performance.now();
    let removed = 0;
    for (;;) {
      const { candidates, gone } = await this.sweepBatch();
      removed += gone;
      if (candidates < SWEEP_BATCH || gone === 0 || performance.now() - started > SWEEP_BUDGET_MS) return removed;
    }
  }

  private async sweepBatch(): Promise<{ candidates: number; gone: number }> {
    const cutoff = this.clock.now() - OBJECT_GRACE_MS;
    const candidates = await this.db.selectFrom("blob_objects").select("hash").where("touched_at", "<", cutoff).where(unreferenced).limit(SWEEP_BATCH).execute();
    let removed = 0;
    for (const { hash } of candidates) if (await (this.soleWriter ? this.removeAlone(hash, cutoff) : this.removeLocked(hash, cutoff))) removed += 1;
    return { candidates: candidates.length, gone: removed };
  }

  /** PostgreSQL: the row, then the object, in one transaction holding the row's lock. */
  private async removeLocked(hash: string, cutoff: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const deleted = await trx.deleteFrom("blob_objects").where("hash", "=", hash).where("touched_at", "<", cutoff).where(unreferenced).returning("hash").executeTakeFirst();
      if (deleted === undefined) return false;
      // Inside the transaction: a failed delete rolls the row back, and the next sweep tries
      // again; a writer reaching for the object meanwhile waits for the row, then makes it anew.
      await this.store.delete(keyOf(hash));
      return true;
    });
  }

  /** SQLite: the object, then the row, with no transaction open across the request to S3 (see the class). */
  private async removeAlone(hash: string, cutoff: number): Promise<boolean> {
    if (this.going.has(hash)) return false; // another sweep run is on it
    let done = () => {};
    // Marked before looking: a writer whose touch comes after the look finds the mark.
    this.going.set(hash, new Promise<void>((resolve) => (done = resolve)));
    try {
      const still = await this.db.selectFrom("blob_objects").select("hash").where("hash", "=", hash).where("touched_at", "<", cutoff).where(unreferenced).executeTakeFirst();
      if (still === undefined) return false;
      await this.store.delete(keyOf(hash));
      // A writer that touched the row meanwhile keeps it, and writes the object again.
      await this.db.deleteFrom("blob_objects").where("hash", "=", hash).where("touched_at", "<", cutoff).where(unreferenced).execute();
      return true;
    } finally {
      this.going.delete(hash);
      done();
    }
  }
}

/** The bytes of the object a row names; a row naming one needs the S3 store it is in (`objects`). */
export async function readObject(objects: ContentObjects | null, hash: string): Promise<Buffer> {
  if (objects === null) throw new Error(`blob object ${hash} is in an S3 blob store, and none is configured`);
  return objects.get(hash);
}

/** The object's key in the blob store, spread over 256 prefixes. */
function keyOf(hash: string): string {
  if (!/^[0-9a-f]{64}$/.test(hash)) throw new Error(`refusing object hash ${JSON.stringify(hash)}`);
  return `objects/${hash.slice(0, 2)}/${hash}`;
}

const unreferenced = sql<boolean>`not exists (select 1 from app_blobs where app_blobs.object_hash = blob_objects.hash)
  and not exists (select 1 from snapshot_values where snapshot_values.object_hash = blob_objects.hash)
  and not exists (select 1 from build_bundles where build_bundles.object_hash = blob_objects.hash)`;
