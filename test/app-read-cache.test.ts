import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { sql, type LogEvent } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { openStore, PgWriteWatch, StampedCache, WriteWatch, type Store } from "../src/store/index.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

// Issue 20: on SQLite an op call's app read (app row, owner's plan, secrets version, token
// epoch) and a webhook delivery's read are kept while the store's WriteWatch stamp stands.
// PostgreSQL reads them per call; caches-instances.test.ts proves that across two instances.

describe("WriteWatch: which statements move the stamp", () => {
  it.each([
    ['update "apps" set "revision" = ? where "id" = ?', true],
    ['delete from "apps" where "id" = ?', true],
    ['update "users" set "plan" = ? where "id" = ?', true],
    ['insert into "secret_versions" ("owner_user_id", "manifest_id", "version") values (?, ?, ?) on conflict do update set "version" = "version" + 1', true],
    ['insert into "secret_versions" ("owner_user_id", "manifest_id", "version") values (?, ?, ?)', true],
    ['update "tokens" set "revoked_at" = ? where "id" = ?', true],
    ['update "tokens" set "last_used_at" = ?, "revoked_at" = ? where "id" = ?', true],
    ['update "webhooks" set "secret_hash" = ?, "secret_prefix" = ? where "id" = ?', true],
    ['update "webhooks" set "enabled" = ?, "consecutive_failures" = ? where "id" = ?', true],
    ['delete from "webhooks" where "id" = ?', true],
    // An unquoted assignment is not Kysely's shape: it might set anything.
    ['update "tokens" set "last_used_at" = ?, revoked_at = ? where "id" = ?', true],
    ["update \"webhooks\" set \"last_error\" = coalesce(?, 'a, \"enabled\" = 0'), \"enabled\" = 0 where \"id\" = ?", true],
    ['delete from "tokens" where "app_id" = ?', true],
    ["update token_epoch set epoch = epoch + 1 where id = 1", true],
    ['insert into "apps" ("id", "owner_user_id") values (?, ?) on conflict ("id") do update set "owner_user_id" = ?', true],
    // What it cannot place moves it: unknown is always safe.
    ['with moved as (select 1) update "apps" set "revision" = 2', true],
    ['alter table "apps" add column "x" integer', true],
    ['delete from "main"."apps"', true],

    // A new row nobody has read: a create, a sign-up, a minted token.
    ['insert into "apps" ("id", "manifest_id") values (?, ?)', false],
    ['insert into "users" ("id", "email") values (?, ?)', false],
    ['insert into "tokens" ("id", "kind", "hash") values (?, ?, ?)', false],
    ['insert into "webhooks" ("id", "app_id", "secret_hash") values (?, ?, ?)', false],
    // Columns no hot-path read uses: a token's use (once a minute), a webhook's last outcome.
    ['update "tokens" set "last_used_at" = ? where "id" = ?', false],
    ['update "webhooks" set "last_run_at" = ?, "last_outcome" = ?, "last_error" = ?, "consecutive_failures" = ? where "id" = ?', false],
    ['update "webhooks" set "last_run_at" = ?, "last_outcome" = ?, "last_error" = ?, "consecutive_failures" = consecutive_failures + 1 where "id" = ?', false],
    // Tables an app read does not join (KV writes touch app_storage_usage on every set).
    ['insert into "app_kv" ("app_id", "key", "value") values (?, ?, ?) on conflict do update set "value" = ?', false],
    ['update "app_storage_usage" set "bytes" = "bytes" + ? where "app_id" = ?', false],
    ['insert into "webhook_deliveries" ("id", "webhook_id") values (?, ?)', false],
    ['update "webhooks" set "last_run_at" = ? where "id" = ?', false],
    // No row content changes.
    ["pragma synchronous = NORMAL", false],
    ["pragma wal_checkpoint(PASSIVE)", false],
    ["commit", false],
  ])("%s → moves: %s", (statement, moves) => {
    expect(WriteWatch.moves(statement)).toBe(moves);
  });
});

describe("StampedCache", () => {
  const watch = new WriteWatch(new Database(":memory:"));
  const counting = () => {
    const loads: string[] = [];
    return { loads, load: (key: string) => () => Promise.resolve((loads.push(key), { key, n: loads.length })) };
  };

  it("loads once per stamp, again once the stamp moves, and hands out frozen values", async () => {
    const cache = new StampedCache<{ key: string; n: number }>(watch);
    const { loads, load } = counting();
    const first = await cache.read("a", load("a"), () => 100);
    expect(await cache.read("a", load("a"), () => 100)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    watch.touch();
    expect(await cache.read("a", load("a"), () => 100)).toEqual({ key: "a", n: 2 });
    expect(loads).toEqual(["a", "a"]);
  });

  it("keeps nothing `weigh` refuses, nor one value over a sixteenth of its 32 MiB", async () => {
    const cache = new StampedCache<{ key: string; n: number }>(watch);
    const { loads, load } = counting();
    await cache.read("a", load("a"), () => null);
    await cache.read("a", load("a"), () => null);
    await cache.read("b", load("b"), () => 2 * 1024 * 1024 + 1);
    await cache.read("b", load("b"), () => 2 * 1024 * 1024 + 1);
    expect(loads).toEqual(["a", "a", "b", "b"]);
  });

  it("forgets its oldest values past 32 MiB of their weights", async () => {
    const cache = new StampedCache<{ key: string; n: number }>(watch);
    const { loads, load } = counting();
    const mib = 1024 * 1024;
    for (let i = 0; i < 33; i++) await cache.read(`k${i}`, load(`k${i}`), () => mib);
    // 33 MiB were offered: the first one went, the second and the last are still there.
    await cache.read("k1", load("k1"), () => mib);
    await cache.read("k32", load("k32"), () => mib);
    expect(loads).toHaveLength(33);
    await cache.read("k0", load("k0"), () => mib);
    expect(loads).toHaveLength(34);
  });
});

describe("WriteWatch on a SQLite store", () => {
  let store: TestStore;
  let other: Store;
  beforeAll(async () => {
    store = await openTestStore("sqlite");
    other = store.openAnother();
  });
  afterAll(async () => {
    await other?.close();
    await store?.dispose();
  });
  const stamp = () => {
    if (store.watch === undefined) throw new Error("a SQLite store has a WriteWatch");
    return store.watch.stamp();
  };

  it("moves for this connection's watched writes, a trigger's included, and not for others", async () => {
    const before = stamp();
    await sql`insert into users (id, email, handle, password_hash, plan, created_at) values ('u1', 'u1@example.test', 'u1', 'x', 'free', 1)`.execute(store.db);
    expect(stamp()).toBe(before);
    await store.db.updateTable("users").set({ plan: "pro" }).where("id", "=", "u1").execute();
    const afterPlan = stamp();
    expect(afterPlan).not.toBe(before);
    await sql`pragma synchronous = NORMAL`.execute(store.db);
    await sql`pragma synchronous = FULL`.execute(store.db);
    expect(stamp()).toBe(afterPlan);
  });

  it("moves when another connection commits anything (the CLI, a second store on the file)", async () => {
    // Looked at twice first, so the second look already trusts the wal-index header.
    stamp();
    const before = stamp();
    await other.db.updateTable("users").set({ plan: "business" }).where("id", "=", "u1").execute();
    expect(stamp()).not.toBe(before);
    expect(other.watch?.stamp()).not.toBeNull();
    // A checkpoint that empties the WAL, then a commit into the restarted WAL: still seen.
    const settled = (stamp(), stamp());
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(other.db);
    await other.db.updateTable("users").set({ plan: "pro" }).where("id", "=", "u1").execute();
    expect(stamp()).not.toBe(settled);
  });

  it("moves when another process commits (an operator's tool)", () => {
    const before = (stamp(), stamp());
    const script = `const db = new (require("better-sqlite3"))(process.argv[1]); db.prepare("update users set plan = 'free' where id = 'u1'").run(); db.close();`;
    const child = spawnSync(process.execPath, ["-e", script, join(store.dataDir, "brickyard.db")], { cwd: process.cwd(), encoding: "utf8" });
    expect(child.status, child.stderr).toBe(0);
    expect(stamp()).not.toBe(before);
  });

  it("asks SQLite only when some connection committed since its last look", async () => {
    // The watch on a connection of its own, whose `pragma data_version` runs are counted.
    const sqlite = new Database(join(store.dataDir, "brickyard.db"));
    let asked = 0;
    const counting = new Proxy(sqlite, {
      get(target, property) {
        if (property !== "prepare") return Reflect.get(target, property, target) as unknown;
        return (source: string) => {
          const statement = target.prepare(source).pluck();
          return { pluck: () => ({ get: () => (asked++, statement.get()) }) };
        };
      },
    });
    const watch = new WriteWatch(counting);
    const first = watch.stamp();
    const base = asked;
    for (let i = 0; i < 100; i++) expect(watch.stamp()).toBe(first);
    expect(asked).toBe(base);
    // A commit on the file, by anyone: the next look asks again, and so it sees the change.
    await other.db.updateTable("users").set({ plan: "business" }).where("id", "=", "u1").execute();
    expect(watch.stamp()).not.toBe(first);
    expect(asked).toBe(base + 1);
    watch.close();
    sqlite.close();
  });

  it("leaves no way for a statement it ignores to change a watched row (triggers, cascades)", async () => {
    const watched = ["apps", "users", "secret_versions", "token_epoch", "tokens", "webhooks"];
    for (const table of watched) expect(WriteWatch.moves(`delete from "${table}" where "id" = ?`), table).toBe(true);
    // A trigger runs inside its statement: it must sit on a table whose writes move the stamp.
    const triggers = (await sql<{ name: string; tbl_name: string }>`select name, tbl_name from sqlite_master where type = 'trigger'`.execute(store.db)).rows;
    expect(triggers.length).toBeGreaterThan(0);
    for (const trigger of triggers) expect(watched, trigger.name).toContain(trigger.tbl_name);
    // A cascade from a parent's delete changes a watched row: the parent must be watched too.
    for (const table of watched) {
      const parents = (await sql<{ table: string }>`select "table" from pragma_foreign_key_list(${table})`.execute(store.db)).rows;
      for (const parent of parents) expect(watched, `${table} → ${parent.table}`).toContain(parent.table);
    }
  });

  it("is PgWriteWatch's on PostgreSQL stores (read-caches-instances.test.ts), and none for a one-off command's", async () => {
    const postgres = openStore({ databaseUrl: "postgres://nobody@127.0.0.1:1/none", dataDir: store.dataDir });
    expect(postgres.watch).toBeInstanceOf(PgWriteWatch);
    // Nothing listens there: no stamp, so every read goes to the database.
    expect(postgres.watch?.stamp()).toBeNull();
    await postgres.close();
    const oneOff = openStore({ databaseUrl: "postgres://nobody@127.0.0.1:1/none", dataDir: store.dataDir, watch: false });
    expect(oneOff.watch).toBeUndefined();
    await oneOff.close();
  });
});

describe("op calls on SQLite read their app once while nothing it depends on changes", () => {
  let server: TestServer;
  let owner: TestUser;
  const appReads: string[] = [];
  const webhookReads: string[] = [];
  let url: string;
  const V1 = `export const manifest = { id: "read-cache", routes: { which: {} } };
export default { async fetch(request, env) { return Response.json({ ok: true, value: { v: 1, secret: env.API_KEY ?? null } }); } };`;
  beforeAll(async () => {
    server = await startServer({
      queryLog: (event: LogEvent) => {
        if (/from "apps"/.test(event.query.sql) && /"token_epoch"/.test(event.query.sql)) appReads.push(event.query.sql);
        if (/^select .* from "apps" .*join "webhooks"/s.test(event.query.sql)) webhookReads.push(event.query.sql);
      },
    });
    owner = await createUser(server);
    const created = await server.client.post("/app", { module: V1 }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    url = `/app/${created.body.id}/api/which`;
  });
  afterAll(async () => {
    await server?.close();
  });
  const call = async (token = owner.token) => {
    const res = await server.client.post(url, {}, { token });
    return { status: res.status, body: res.body as { ok: boolean; value?: { v: number; secret: string | null }; error?: { kind: string; reason?: string } } };
  };
  const readsOf = async (work: () => Promise<unknown>): Promise<number> => {
    appReads.length = 0;
    await work();
    return appReads.length;
  };

  it("reads the app for the first call and not for the next ones", async () => {
    expect(await readsOf(() => call())).toBe(1);
    expect(await readsOf(async () => [await call(), await call(), await call()])).toBe(0);
    expect((await call()).body.value).toEqual({ v: 1, secret: null });
  });

  it("runs a new revision at the very next call after a PUT", async () => {
    const appId = url.split("/")[2] ?? "";
    const put = await server.client.put(`/app/${appId}`, { module: V1.replace("v: 1", "v: 2") }, { token: owner.token });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await call()).body.value).toEqual({ v: 2, secret: null });
  });

  it("finds a published revision's app row kept by its warm-up: its first call reads none", async () => {
    const appId = url.split("/")[2] ?? "";
    const put = await server.client.put(`/app/${appId}`, { module: V1.replace("v: 1", "v: 3") }, { token: owner.token });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    await server.ctx.runner.warmed(appId);
    let answered: unknown;
    expect(await readsOf(async () => (answered = (await call()).body.value))).toBe(0);
    expect(answered).toEqual({ v: 3, secret: null });
    // Back to the source the cases below expect.
    expect((await server.client.put(`/app/${appId}`, { module: V1.replace("v: 1", "v: 2") }, { token: owner.token })).status).toBe(200);
  });

  it("gives the very next call a secret set, then replaced, through the API", async () => {
    const appId = url.split("/")[2] ?? "";
    expect((await server.client.post(`/app/${appId}/secrets`, { name: "API_KEY", value: "first" }, { token: owner.token })).status).toBe(201);
    expect((await call()).body.value).toEqual({ v: 2, secret: "first" });
    expect((await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: "second" }, { token: owner.token })).status).toBe(200);
    expect((await call()).body.value).toEqual({ v: 2, secret: "second" });
  });

  it("refuses a token at the very next call after it is revoked through the API", async () => {
    const minted = await server.client.post("/api/token", { name: "short-lived" }, { token: owner.token });
    expect((await call(minted.body.token)).status).toBe(200);
    expect((await call(minted.body.token)).status).toBe(200);
    expect((await server.client.delete(`/api/token/${minted.body.id}`, { token: owner.token })).status).toBe(200);
    const refused = await call(minted.body.token);
    expect([refused.status, refused.body.error?.kind, refused.body.error?.reason]).toEqual([401, "unauthorized", "token_revoked"]);
  });

  it("refuses a token at the very next call after another connection revokes it (as an operator's tool would)", async () => {
    const minted = await server.client.post("/api/token", { name: "revoked-elsewhere" }, { token: owner.token });
    expect((await call(minted.body.token)).status).toBe(200);
    expect(await readsOf(() => call(minted.body.token))).toBe(0);
    const elsewhere = openStore({ databaseUrl: null, dataDir: server.config.dataDir });
    try {
      await elsewhere.db.updateTable("tokens").set({ revoked_at: Date.now(), revoked_reason: "revoked" }).where("id", "=", minted.body.id).execute();
    } finally {
      await elsewhere.close();
    }
    const refused = await call(minted.body.token);
    expect([refused.status, refused.body.error?.kind, refused.body.error?.reason]).toEqual([401, "unauthorized", "token_revoked"]);
  });

  it("reads a webhook and its app for the first delivery only, and sees a rotated secret at the next", async () => {
    const appId = url.split("/")[2] ?? "";
    const created = await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "which" }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const hook = created.body.webhook as { id: string; secret: string };
    const deliver = (secret: string) => server.client.post(`/api/v1/hooks/${hook.id}`, {}, { token: secret });
    webhookReads.length = 0;
    expect((await deliver(hook.secret)).status).toBe(200);
    expect(webhookReads).toHaveLength(1);
    for (let i = 0; i < 3; i++) expect((await deliver(hook.secret)).status).toBe(200);
    expect(webhookReads).toHaveLength(1);
    const rotated = await server.client.patch(`/api/v1/webhooks/${hook.id}`, { rotate_secret: true }, { token: owner.token });
    expect(rotated.status).toBe(200);
    const refused = await deliver(hook.secret);
    expect([refused.status, refused.body.error?.kind]).toEqual([401, "unauthorized"]);
    expect((await deliver(rotated.body.webhook.secret)).status).toBe(200);
  });

  it("hands out records no call can change: they are shared by the calls that hit", async () => {
    const appId = url.split("/")[2] ?? "";
    await call();
    const { app } = await server.ctx.apps.getWithTokenEpoch(appId);
    expect(app).not.toBeNull();
    expect(Object.isFrozen(app)).toBe(true);
    expect(Object.isFrozen(app?.manifest.routes)).toBe(true);
  });
});
