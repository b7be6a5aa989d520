import { Migrator, sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemClock } from "../src/config/clock.ts";
import { ApiError } from "../src/errors/index.ts";
import { keyCost } from "../src/runtime/storage/limits.ts";
import { AppStorage } from "../src/runtime/storage/index.ts";
import { migrationProvider } from "../src/store/migrations/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { exactKeyBytes, keptKeyBytes } from "./helpers/executor.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

const KEY = (c: string) => c.repeat(512);
const COST = keyCost(KEY("a"));

async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return "written";
  } catch (err) {
    if (err instanceof ApiError) return `${err.status} ${err.kind}`;
    throw err;
  }
}

/**
 * The values' cap (100 MiB) does not count keys: an app could write 512-byte keys with 1-byte
 * values without end. Each key costs its length and 64 bytes against a cap of its own
 * (KEYS_CAP_BYTES, lowered here to be reached), on every write path: SQLite's, PostgreSQL's
 * one-statement write and its batch of a turn's writes, several keys at once, blobs.
 */
describeEachDialect("an app's keys: each costs its length and 64 bytes, within a cap of their own", (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(dialect);
  });
  afterAll(async () => store?.dispose());

  it("counts a new key, not a key written again; a delete gives it back; KV and blob keys share the cap", async () => {
    const storage = new AppStorage(store, systemClock, null, 3 * COST);
    const app = "keys-one";
    await storage.kvCommit(app, [{ key: KEY("a"), value: "1" }]);
    await storage.kvCommit(app, [{ key: KEY("b"), value: "1" }, { key: KEY("c"), value: "1" }]);
    expect(await keptKeyBytes(store, app)).toBe(3 * COST);
    expect(await outcome(() => storage.kvCommit(app, [{ key: KEY("d"), value: "1" }]))).toBe("413 storage_full");
    expect(await outcome(() => storage.kvCommit(app, [{ key: KEY("a"), value: "2" }, { key: KEY("d"), value: "1" }]))).toBe("413 storage_full");
    expect(await storage.kvGet(app, KEY("d"))).toBeNull();
    expect(await storage.kvGet(app, KEY("a"))).toBe("1");
    // Written again, one key at a time and several at once: no more key bytes.
    await storage.kvCommit(app, [{ key: KEY("a"), value: "22" }]);
    await storage.kvCommit(app, [{ key: KEY("b"), value: "22" }, { key: KEY("c"), value: "22" }]);
    expect(await outcome(() => storage.blobPut(app, KEY("e"), Buffer.from("x"), "text/plain"))).toBe("413 storage_full");
    expect(await storage.kvDelete(app, KEY("a"))).toBe(true);
    await storage.blobPut(app, KEY("e"), Buffer.alloc(0), "text/plain");
    // A blob of no bytes is still a key: written again, it costs nothing more.
    await storage.blobPut(app, KEY("e"), Buffer.alloc(0), "text/plain");
    expect(await outcome(() => storage.kvCommit(app, [{ key: KEY("a"), value: "1" }]))).toBe("413 storage_full");
    expect(await storage.blobDelete(app, KEY("e"))).toBe(true);
    await storage.kvCommit(app, [{ key: KEY("a"), value: "1" }]);
    expect(await keptKeyBytes(store, app)).toBe(3 * COST);
    expect(await exactKeyBytes(store, app)).toBe(3 * COST);
  });

  it("the writes of one turn (PostgreSQL sends them as one statement): the one past the cap alone is refused", async () => {
    const storage = new AppStorage(store, systemClock, null, 2 * COST);
    const app = "keys-turn";
    const results = await Promise.all(["a", "b", "c", "a"].map((c, i) => outcome(() => storage.kvCommit(app, [{ key: KEY(c), value: String(i) }]))));
    expect(results.filter((r) => r === "written")).toHaveLength(3);
    expect(results.filter((r) => r === "413 storage_full")).toHaveLength(1);
    expect(await keptKeyBytes(store, app)).toBe(2 * COST);
    expect(await exactKeyBytes(store, app)).toBe(2 * COST);
  });

  it("a key's cost is its UTF-8 length and 64, as SQL counts it too", async () => {
    expect(keyCost("é")).toBe(2 + 64);
    const storage = new AppStorage(store, systemClock);
    await storage.kvCommit("keys-utf8", [{ key: "é".repeat(100), value: "1" }, { key: "plain", value: "1" }]);
    expect(await keptKeyBytes(store, "keys-utf8")).toBe(200 + 64 + 5 + 64);
  });
});

describeEachDialect("migration 033 counts the keys already stored", (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(dialect, { migrate: false });
  });
  afterAll(async () => store?.dispose());

  it("sets each usage row's key_bytes from its app's KV and blob keys, and the new functions write", async () => {
    const migrator = new Migrator({ db: store.db, provider: migrationProvider(dialect) });
    expect((await migrator.migrateTo("032-visitor-usage")).error).toBeUndefined();
    const now = Date.now();
    await store.db.insertInto("app_kv").values([{ app_id: "m", key: "é", value: "1", size: 1, updated_at: now }, { app_id: "m", key: "kv", value: "2", size: 1, updated_at: now }]).execute();
    await store.db.insertInto("app_blobs").values({ app_id: "m", key: "blob", data: Buffer.from("x"), content_type: "text/plain", size: 1, updated_at: now }).execute();
    await store.db.insertInto("app_storage_usage").values({ app_id: "m", bytes: 3 }).execute();
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await keptKeyBytes(store, "m")).toBe(keyCost("é") + keyCost("kv") + keyCost("blob"));
    const storage = new AppStorage(store, systemClock);
    await storage.kvCommit("m", [{ key: "new", value: "3" }]);
    expect(await keptKeyBytes(store, "m")).toBe(await exactKeyBytes(store, "m"));
    if (dialect === "postgres") {
      // An instance still running the code from before (a rolling upgrade) calls the old
      // signatures: they write on, and count the keys they add.
      await sql`select * from brickyard_kv_set('m', 'old-one', '1', 1, ${Date.now()}, ${100 * 1024 * 1024})`.execute(store.db);
      const many = await sql<{ out_refused: string | null }>`select * from brickyard_kv_set_many(array['m', 'm'], array['old-é', 'old-two'], array['1', '2'], array[1, 1]::bigint[], ${Date.now()}, array[${100 * 1024 * 1024}, ${100 * 1024 * 1024}]::bigint[])`.execute(store.db);
      expect(many.rows.map((r) => r.out_refused)).toEqual([null, null]);
      expect(await storage.kvGet("m", "old-é")).toBe("1");
      expect(await keptKeyBytes(store, "m")).toBe(await exactKeyBytes(store, "m"));
    }
  });
});
