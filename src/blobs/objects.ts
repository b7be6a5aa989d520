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
 *   OBJECT_GRACE_MS (longer than any write takes between its touch and its commit). The sweep deletes the row, under its
 *   lock, before the object and commits after: a writer touching the row meanwhile waits, then
 *   makes it anew and writes the object again after the delete.
 */
export class ContentObjects {
  // Objects never change under their name, so what was read stays right on every instance.
  private readonly cache: BlobReadCache;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly store: BlobStore,
    private readonly clock: Clock,
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
    for (const { hash } of candidates) {
      const gone = await this.db.transaction().execute(async (trx) => {
        const deleted = await trx.deleteFrom("blob_objects").where("hash", "=", hash).where("touched_at", "<", cutoff).where(unreferenced).returning("hash").executeTakeFirst();
        if (deleted === undefined) return false;
        // Inside the transaction: a failed delete rolls the row back, and the next sweep tries
        // again; a writer reaching for the object meanwhile waits for the row, then makes it anew.
        // On SQLite this holds the one connection for the request (bounded by the S3 client's
        // timeouts): the price of never deleting an object a commit is about to refer to.
        await this.store.delete(keyOf(hash));
        return true;
      });
      if (gone) removed += 1;
    }
    return { candidates: candidates.length, gone: removed };
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
