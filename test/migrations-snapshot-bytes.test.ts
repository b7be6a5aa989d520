import { randomUUID } from "node:crypto";
import { Migrator } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { recountTotals } from "../src/runtime/index.ts";
import { migrationProvider } from "../src/store/migrations/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

describeEachDialect("migration 037: what snapshots hold counts in the app's total", (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(dialect, { migrate: false });
  });
  afterAll(async () => store.dispose());

  it("adds each app's distinct snapshot values once to its total, values another app shares included", async () => {
    const migrator = new Migrator({ db: store.db, provider: migrationProvider(dialect) });
    expect((await migrator.migrateTo("036-outbox-created")).error).toBeUndefined();
    const owner = randomUUID();
    await store.db.insertInto("users").values({ id: owner, email: "s@example.test", handle: "snapper", password_hash: "x", plan: "free", created_at: 0 }).execute();
    const app = (manifestId: string) => ({ id: randomUUID(), manifest_id: manifestId, display_name: manifestId, owner_user_id: owner, claimed_at: 0, expires_at: null, revision: 1, manifest: "{}", icon_override: null, starter_prompt: null, copied_from: null, created_at: 0, updated_at: 0, suspended_at: null, suspended_reason: null });
    const [one, two, none] = [app("one"), app("two"), app("none")];
    await store.db.insertInto("apps").values([one, two, none]).execute();
    // Live values as the rows hold them: one has a 5-byte value, the others none.
    await store.db.insertInto("app_kv").values({ app_id: one.id, key: "k", value: '"abc"', size: 5, updated_at: 0 }).execute();
    await store.db.insertInto("app_storage_usage").values([{ app_id: one.id, bytes: 5, key_bytes: 65 }, { app_id: two.id, bytes: 0, key_bytes: 0 }, { app_id: none.id, bytes: 0, key_bytes: 0 }]).execute();
    await store.db.insertInto("snapshot_values").values([{ hash: "h1", data: Buffer.alloc(100), object_hash: null, size: 100 }, { hash: "h2", data: Buffer.alloc(20), object_hash: null, size: 20 }]).execute();
    const snapshot = (appId: string, entries: [string, string][]) => {
      const id = randomUUID();
      return { row: { id, app_id: appId, revision: 1, keys: entries.length, bytes: 0, created_at: 0 }, entries: entries.map(([key, hash]) => ({ snapshot_id: id, store: "kv" as const, key, hash, size: hash === "h1" ? 100 : 20, content_type: null })) };
    };
    // one: h1 under two keys and in two snapshots, and h2: 120 bytes. two: h1 alone, shared with one: 100.
    const taken = [snapshot(one.id, [["a", "h1"], ["b", "h1"]]), snapshot(one.id, [["a", "h1"], ["c", "h2"]]), snapshot(two.id, [["x", "h1"]])];
    for (const s of taken) {
      await store.db.insertInto("app_snapshots").values(s.row).execute();
      await store.db.insertInto("snapshot_entries").values(s.entries).execute();
    }

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const totals = new Map((await store.db.selectFrom("app_storage_usage").select(["app_id", "bytes"]).execute()).map((r) => [r.app_id, Number(r.bytes)]));
    expect([totals.get(one.id), totals.get(two.id), totals.get(none.id)]).toEqual([125, 100, 0]);
    // The recount counts them the same way: nothing to mend.
    expect(await recountTotals(store, undefined)).toEqual([]);
  });
});
