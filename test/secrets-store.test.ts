import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../src/config/clock.ts";
import { KEY_FILE, loadSecretsKey } from "../src/domain/secrets/key.ts";
import { open, scopeOf, seal } from "../src/domain/secrets/seal.ts";
import { Secrets, SECRETS_PER_APP, type SecretScope } from "../src/domain/secrets/secrets.ts";
import { ApiError } from "../src/errors/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { insertApp, openTestStore, type TestStore } from "./helpers/store.ts";

describe("secrets key and sealing", () => {
  it("generates the key once into DATA_DIR with 0600 permissions and reuses it", () => {
    const dir = mkdtempSync(join(tmpdir(), "brickyard-key-"));
    const first = loadSecretsKey(null, dir);
    expect(first).toHaveLength(32);
    expect(statSync(join(dir, KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(loadSecretsKey(null, dir).equals(first)).toBe(true);
    const configured = randomBytes(32);
    expect(loadSecretsKey(configured.toString("base64"), dir).equals(configured)).toBe(true);
  });

  it("binds a sealed value to its scope: it does not open under another app or name", () => {
    const key = randomBytes(32);
    const sealed = seal(key, scopeOf("u1", "weather", "API_KEY"), "s3cret value");
    expect(sealed).not.toContain("s3cret");
    expect(open(key, scopeOf("u1", "weather", "API_KEY"), sealed)).toBe("s3cret value");
    expect(() => open(key, scopeOf("u1", "other-app", "API_KEY"), sealed)).toThrow();
    expect(() => open(key, scopeOf("u1", "weather", "OTHER"), sealed)).toThrow();
    expect(() => open(randomBytes(32), scopeOf("u1", "weather", "API_KEY"), sealed)).toThrow();
  });
});

describeEachDialect("secrets store", (dialect) => {
  let store: TestStore;
  let secrets: Secrets;
  let scope: SecretScope;
  const clock = new ManualClock();
  beforeAll(async () => {
    store = await openTestStore(dialect);
    const ownerUserId = randomUUID();
    await store.db.insertInto("users").values({ id: ownerUserId, email: "o@example.test", handle: "owner", password_hash: "x", plan: "free", created_at: 0 }).execute();
    secrets = new Secrets(store.db, store.dialect, clock, loadSecretsKey(null, store.dataDir));
    scope = { ownerUserId, manifestId: "weather" };
    // Secrets are written only for an app that holds their scope (Secrets.lockScope).
    for (const manifestId of ["weather", "versioned", "moving"]) await insertApp(store, randomUUID(), { userId: ownerUserId, manifestId });
  });
  afterAll(async () => store.dispose());

  it("creates, refuses a duplicate, replaces, lists names only, deletes", async () => {
    await secrets.create(scope, "API_KEY", "first");
    await expect(secrets.create(scope, "API_KEY", "again")).rejects.toMatchObject({ kind: "secret_already_exists", status: 409 });
    expect(await secrets.put(scope, "API_KEY", "second")).toEqual({ created: false });
    expect(await secrets.put(scope, "TOKEN_2", "other")).toEqual({ created: true });
    expect(await secrets.names(scope)).toEqual(["API_KEY", "TOKEN_2"]);
    expect(await secrets.valuesFor(scope)).toEqual({ API_KEY: "second", TOKEN_2: "other" });
    // Another manifest id of the same owner sees none of them.
    expect(await secrets.names({ ...scope, manifestId: "other" })).toEqual([]);
    await secrets.delete(scope, "TOKEN_2");
    await expect(secrets.delete(scope, "TOKEN_2")).rejects.toMatchObject({ kind: "secret_not_found", status: 404 });
    const rows = await store.db.selectFrom("secrets").selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain("second");
  });

  it("refuses bad names and values over 8 KiB with the spec's kinds", async () => {
    for (const name of ["lower", "1ABC", "A-B", "", "A".repeat(65)]) {
      const error = await secrets.create(scope, name, "v").catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ kind: "invalid_secret_name", status: 400 });
    }
    await secrets.create(scope, "EXACTLY_8K", "x".repeat(8 * 1024));
    await expect(secrets.put(scope, "TOO_BIG", "x".repeat(8 * 1024 + 1))).rejects.toMatchObject({
      kind: "secret_too_large",
      status: 400,
      fields: { recovery: { kind: "shrink", field: "secret", cap_bytes: 8192 } },
    });
  });

  it("changes its version on every write and delete, even within one millisecond", async () => {
    const s = { ...scope, manifestId: "versioned" };
    const seen = new Set([await secrets.version(s)]);
    await secrets.put(s, "A", "1");
    seen.add(await secrets.version(s));
    await secrets.put(s, "A", "1");
    seen.add(await secrets.version(s));
    await secrets.delete(s, "A");
    await secrets.put(s, "B", "1");
    seen.add(await secrets.version(s));
    expect(seen.size).toBe(4);
    expect([...seen].every((v) => Number.isSafeInteger(v))).toBe(true);
    // A refused write changes nothing.
    const before = await secrets.version(s);
    await expect(secrets.create(s, "B", "again")).rejects.toMatchObject({ kind: "secret_already_exists" });
    await expect(secrets.delete(s, "NOT_THERE")).rejects.toMatchObject({ kind: "secret_not_found" });
    expect(await secrets.version(s)).toBe(before);
  });

  it(`holds at most ${SECRETS_PER_APP} secrets an app: a new one past that is refused, a replacement is not`, async () => {
    const full = { ...scope, manifestId: "full" };
    await insertApp(store, randomUUID(), { userId: scope.ownerUserId, manifestId: "full" });
    for (let i = 0; i < SECRETS_PER_APP; i++) await secrets.put(full, `KEY_${i}`, "v");
    await expect(secrets.create(full, "ONE_MORE", "v")).rejects.toMatchObject({ kind: "invalid_request", status: 400 });
    await expect(secrets.put(full, "ONE_MORE", "v")).rejects.toMatchObject({ kind: "invalid_request", status: 400 });
    expect(await secrets.put(full, "KEY_0", "replaced")).toEqual({ created: false });
    expect((await secrets.names(full)).length).toBe(SECRETS_PER_APP);
  });

  it("writes nothing to a scope no app holds any more (its app deleted, or moved, since it was read)", async () => {
    const gone = { ...scope, manifestId: "deleted-meanwhile" };
    await expect(secrets.create(gone, "API_KEY", "v")).rejects.toMatchObject({ kind: "app_not_found", status: 404 });
    await expect(secrets.put(gone, "API_KEY", "v")).rejects.toMatchObject({ kind: "app_not_found", status: 404 });
    await expect(secrets.delete(gone, "API_KEY")).rejects.toMatchObject({ kind: "app_not_found", status: 404 });
    expect(await secrets.names(gone)).toEqual([]);
  });

  it("gives both scopes of a move a version neither had: a moved app never meets an isolate of its old owner", async () => {
    const to = { ownerUserId: randomUUID(), manifestId: "moving" };
    await store.db.insertInto("users").values({ id: to.ownerUserId, email: "t@example.test", handle: "taker", password_hash: "x", plan: "free", created_at: 0 }).execute();
    await insertApp(store, randomUUID(), { userId: to.ownerUserId, manifestId: "moving" });
    const from = { ...scope, manifestId: "moving" };
    await secrets.put(from, "KEY", "theirs");
    await secrets.put(to, "LEFT_OVER", "left by an app deleted there");
    const seen = [await secrets.version(from), await secrets.version(to)];
    await store.db.transaction().execute((trx) => secrets.moveScope(trx, from, to));
    const after = [await secrets.version(from), await secrets.version(to)];
    for (const version of after) expect(seen).not.toContain(version);
    expect(await secrets.valuesFor(to)).toEqual({ KEY: "theirs", LEFT_OVER: "left by an app deleted there" });
  });
});
