import { randomUUID } from "node:crypto";
import { Migrator } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { migrationProvider } from "../src/store/migrations/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

describeEachDialect("migration 019: secret versions", (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(dialect, { migrate: false });
  });
  afterAll(async () => store.dispose());

  it("gives every scope that already holds secrets its own version, and none to the others", async () => {
    const migrator = new Migrator({ db: store.db, provider: migrationProvider(dialect) });
    expect((await migrator.migrateTo("018-call-counts")).error).toBeUndefined();
    const owner = randomUUID();
    await store.db.insertInto("users").values({ id: owner, email: "m@example.test", handle: "migrating", password_hash: "x", plan: "free", created_at: 0 }).execute();
    const secret = (manifestId: string, name: string) => ({ owner_user_id: owner, manifest_id: manifestId, name, sealed: "v1.x.y.z", size_bytes: 1, created_at: 0, updated_at: 0 });
    await store.db.insertInto("secrets").values([secret("one", "A"), secret("one", "B"), secret("two", "A")]).execute();

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const rows = await store.db.selectFrom("secret_versions").selectAll().orderBy("manifest_id").execute();
    expect(rows.map((row) => row.manifest_id)).toEqual(["one", "two"]);
    for (const row of rows) {
      expect(Number.isSafeInteger(Number(row.version))).toBe(true);
      expect(Number(row.version)).toBeGreaterThan(0);
    }
  });
});
