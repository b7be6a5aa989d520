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

    // To 019 only: these scopes have no app, and 035 takes such scopes' secrets away.
    expect((await migrator.migrateTo("019-secret-versions")).error).toBeUndefined();
    const rows = await store.db.selectFrom("secret_versions").selectAll().orderBy("manifest_id").execute();
    expect(rows.map((row) => row.manifest_id)).toEqual(["one", "two"]);
    for (const row of rows) {
      expect(Number.isSafeInteger(Number(row.version))).toBe(true);
      expect(Number(row.version)).toBeGreaterThan(0);
    }
  });
});

describeEachDialect("migration 035: secrets a deleted app left", (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(dialect, { migrate: false });
  });
  afterAll(async () => store.dispose());

  it("removes the secrets and versions of scopes no app holds, and keeps those of live apps", async () => {
    const migrator = new Migrator({ db: store.db, provider: migrationProvider(dialect) });
    expect((await migrator.migrateTo("034-usage-row-kept")).error).toBeUndefined();
    const [owner, other] = [randomUUID(), randomUUID()];
    for (const [id, handle] of [[owner, "keeper"], [other, "another"]] as const) {
      await store.db.insertInto("users").values({ id, email: `${handle}@example.test`, handle, password_hash: "x", plan: "free", created_at: 0 }).execute();
    }
    const app = (ownerUserId: string, manifestId: string) => ({ id: randomUUID(), manifest_id: manifestId, display_name: manifestId, owner_user_id: ownerUserId, claimed_at: 0, expires_at: null, revision: 1, manifest: "{}", icon_override: null, starter_prompt: null, copied_from: null, created_at: 0, updated_at: 0, suspended_at: null, suspended_reason: null });
    await store.db.insertInto("apps").values([app(owner, "live"), app(other, "gone")]).execute();
    const secret = (ownerUserId: string, manifestId: string, name: string) => ({ owner_user_id: ownerUserId, manifest_id: manifestId, name, sealed: "v1.x.y.z", size_bytes: 1, created_at: 0, updated_at: 0 });
    // "gone" is live for another owner only: this owner's app of that name was deleted.
    await store.db.insertInto("secrets").values([secret(owner, "live", "A"), secret(owner, "gone", "B"), secret(other, "gone", "C")]).execute();
    await store.db.insertInto("secret_versions").values([{ owner_user_id: owner, manifest_id: "live", version: 7 }, { owner_user_id: owner, manifest_id: "gone", version: 8 }, { owner_user_id: other, manifest_id: "gone", version: 9 }]).execute();

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const secrets = await store.db.selectFrom("secrets").select(["owner_user_id", "manifest_id", "name"]).orderBy("name").execute();
    expect(secrets).toEqual([
      { owner_user_id: owner, manifest_id: "live", name: "A" },
      { owner_user_id: other, manifest_id: "gone", name: "C" },
    ]);
    const versions = await store.db.selectFrom("secret_versions").select(["manifest_id", "version"]).orderBy("version").execute();
    expect(versions.map((v) => [v.manifest_id, Number(v.version)])).toEqual([
      ["live", 7],
      ["gone", 9],
    ]);
  });
});
