import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.ts";
import { HOUR, ManualClock } from "../src/config/clock.ts";
import type { BlobStore } from "../src/blobs/blob-store.ts";
import { ContentObjects } from "../src/blobs/objects.ts";
import { openBlobStore } from "../src/blobs/open.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startS3, type TestS3 } from "./helpers/s3.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

/** The bucket, with deletes that wait at a gate the test opens: a slow S3, under the test's control. */
class GatedDeletes implements BlobStore {
  private gate: { entered: () => void; open: Promise<void>; fail: boolean } | null = null;
  constructor(private readonly inner: BlobStore) {}

  /** The next delete waits until the returned `open` is called; `entered` resolves once it is waiting. */
  hold(options: { fail?: boolean } = {}): { entered: Promise<void>; open: () => void } {
    let entered = () => {};
    let open = () => {};
    const reached = new Promise<void>((resolve) => (entered = resolve));
    this.gate = { entered: () => entered(), open: new Promise<void>((resolve) => (open = resolve)), fail: options.fail === true };
    return { entered: reached, open };
  }

  /** What reached the bucket, in order: `put <key>`, `deleted <key>`. */
  readonly log: string[] = [];
  async put(key: string, data: Buffer): Promise<void> {
    this.log.push(`put ${key}`);
    await this.inner.put(key, data);
  }
  get = (key: string) => this.inner.get(key);
  deletePrefix = (prefix: string) => this.inner.deletePrefix(prefix);
  close = () => this.inner.close();
  async delete(key: string): Promise<void> {
    const gate = this.gate;
    this.gate = null;
    if (gate !== null) {
      gate.entered();
      await gate.open;
      if (gate.fail) throw new Error("S3 answered 503");
    }
    await this.inner.delete(key);
    this.log.push(`deleted ${key}`);
  }
}

/** Waits, a turn of the event loop at a time, until `holds` does. */
async function until(holds: () => Promise<boolean>): Promise<void> {
  while (!(await holds())) await new Promise((resolve) => setImmediate(resolve));
}

describeEachDialect("the content objects' sweep beside writers (S3, s3rver)", (dialect) => {
  let s3: TestS3;
  let store: TestStore;
  let bucket: GatedDeletes;
  let objects: ContentObjects;
  const clock = new ManualClock(Date.UTC(2026, 10, 1));
  beforeAll(async () => {
    s3 = await startS3();
    store = await openTestStore(dialect);
    const config = loadConfig({ DATA_DIR: store.dataDir, BLOB_STORE: s3.blobStore("sweep") });
    bucket = new GatedDeletes(await openBlobStore(config.blobStore));
    objects = new ContentObjects(store.db, bucket, clock, dialect === "sqlite");
  });
  afterAll(async () => {
    bucket?.close();
    await store?.dispose();
    await s3?.close();
  });

  const row = (hash: string) => store.db.selectFrom("blob_objects").select("hash").where("hash", "=", hash).executeTakeFirst();

  it("a writer putting the very bytes a sweep is deleting ends with its object and its row", async () => {
    const bytes = Buffer.from("a value nothing refers to, then one that is written again");
    const hash = await objects.put(bytes);
    clock.advance(2 * HOUR);
    const gate = bucket.hold();
    const sweep = objects.sweep();
    await gate.entered;
    const writer = objects.put(bytes);
    // SQLite: the writer's touch commits while the object's delete is under way (nothing holds
    // the connection), and its upload must wait for that delete. PostgreSQL: the touch waits for
    // the sweep's transaction, which holds the row until the object is gone.
    if (dialect === "sqlite") await until(async () => Number((await store.db.selectFrom("blob_objects").select("touched_at").where("hash", "=", hash).executeTakeFirst())?.touched_at) === clock.now());
    gate.open();
    expect(await sweep).toBe(1);
    expect(await writer).toBe(hash);
    // The writer's upload came after the delete, whichever way it waited.
    const key = `objects/${hash.slice(0, 2)}/${hash}`;
    expect(bucket.log.slice(bucket.log.indexOf(`deleted ${key}`)), JSON.stringify(bucket.log)).toContain(`put ${key}`);
    expect((await objects.get(hash)).equals(bytes)).toBe(true);
    expect(await row(hash)).toEqual({ hash });
  });

  it("a failed delete keeps the row, and the next sweep removes both", async () => {
    const hash = await objects.put(Buffer.from("an object S3 will not delete at first"));
    clock.advance(2 * HOUR);
    const gate = bucket.hold({ fail: true });
    const sweep = objects.sweep();
    await gate.entered;
    gate.open();
    await expect(sweep).rejects.toThrow("503");
    expect(await row(hash)).toEqual({ hash });
    expect(await objects.sweep()).toBeGreaterThanOrEqual(1);
    expect(await row(hash)).toBeUndefined();
    await expect(objects.get(hash)).rejects.toThrow("missing");
  });

  if (dialect === "sqlite") {
    it("a sweep waiting on S3 holds no connection: reads and writes of the service go on meanwhile", async () => {
      const hash = await objects.put(Buffer.from("an object whose delete S3 is slow to answer"));
      clock.advance(2 * HOUR);
      const gate = bucket.hold();
      const sweep = objects.sweep();
      await gate.entered;
      // With the row's delete and the object's in one transaction, both wait for the gate: the
      // test would time out here.
      expect(await row(hash)).toEqual({ hash });
      await store.db.insertInto("blob_objects").values({ hash: "f".repeat(64), size: 1, touched_at: clock.now() }).execute();
      gate.open();
      expect(await sweep).toBe(1);
      expect(await row(hash)).toBeUndefined();
    });
  }
});
