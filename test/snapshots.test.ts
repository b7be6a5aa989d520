import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { exactKeyBytes, keptKeyBytes } from "./helpers/executor.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = (marker: string) => `export const manifest = {
  id: "kv-app",
  capabilities: { imports: ["svc:storage/kv@1.0", "svc:storage/blob@1.0"] },
  routes: { set: { access: "write" }, del: { access: "write" }, dump: { access: "read" } },
};
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    const input = await request.json();
    if (op === "set") { await env.KV.set(input.k, input.v); if (input.blob) await env.BLOB.put(input.k, new Uint8Array(input.blob), { contentType: "image/png" }); return Response.json({ ok: true, value: true }); }
    if (op === "del") { await env.KV.delete(input.k); return Response.json({ ok: true, value: true }); }
    const keys = (await env.KV.list({})).keys;
    const out = {};
    for (const { key } of keys) out[key] = await env.KV.get(key);
    const blob = await env.BLOB.get("pic");
    return Response.json({ ok: true, value: { marker: ${JSON.stringify(marker)}, kv: out, pic: blob === null ? null : [...new Uint8Array(blob.data)] } });
  },
};
`;

/** Issue 16, data snapshots: capture by content, dry run, restore with the code in one transaction. */
describeEachDialect("snapshots", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let appId: string;
  const call = (op: string, input: unknown) => server.client.post(`/app/${appId}/api/${op}`, input, { token: owner.token });
  const snap = () => server.client.post(`/app/${appId}/snapshots`, undefined, { token: owner.token });
  const restore = (revision: number, body: unknown, ifMatch: number) =>
    server.client.post(`/app/${appId}/versions/${revision}/restore`, body, { token: owner.token, headers: { "if-match": `"${ifMatch}"` } });

  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());
  beforeEach(async () => {
    owner = await makeUser(server);
    appId = (await server.client.post("/app", { module: source("v1") }, { token: owner.token })).body.id;
  });

  it("a dry run lists exactly the keys a restore would add, change and remove; the restore brings code and data back byte for byte", async () => {
    await call("set", { k: "a", v: "alpha" });
    await call("set", { k: "b", v: { nested: ["ünï", 1, null] } });
    await call("set", { k: "c", v: 3 });
    await call("set", { k: "pic", v: "p", blob: [1, 2, 3] });
    const taken = await snap();
    expect(taken.status).toBe(201);
    expect(taken.body.snapshot).toMatchObject({ id: expect.any(String), revision: 1, keys: 5 });
    const before = (await call("dump", {})).body.value;
    expect(before).toEqual({ marker: "v1", kv: { a: "alpha", b: { nested: ["ünï", 1, null] }, c: 3, pic: "p" }, pic: [1, 2, 3] });

    await server.client.put(`/app/${appId}`, { module: source("v2") }, { token: owner.token });
    await call("set", { k: "a", v: "changed" });
    await call("del", { k: "b" });
    await call("set", { k: "d", v: "new" });
    await call("set", { k: "pic", v: "p", blob: [9, 9] });
    const after = (await call("dump", {})).body.value;
    expect(after).toEqual({ marker: "v2", kv: { a: "changed", c: 3, d: "new", pic: "p" }, pic: [9, 9] });

    const dry = await restore(1, { snapshot: taken.body.snapshot.id, dry_run: true }, 2);
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body).toEqual({
      ok: true,
      changes: {
        added: [{ store: "kv", key: "b" }],
        changed: [
          { store: "blob", key: "pic" },
          { store: "kv", key: "a" },
        ],
        removed: [{ store: "kv", key: "d" }],
        bytes: taken.body.snapshot.bytes,
      },
    });
    // Nothing changed: not the code, not the data.
    expect((await call("dump", {})).body.value).toEqual(after);
    expect((await server.client.get(`/app/${appId}/source`, { token: owner.token })).body.revision).toBe(2);

    const restored = await restore(1, { snapshot: taken.body.snapshot.id }, 2);
    expect(restored.body).toMatchObject({ ok: true, revision: 3, restoredFrom: 1 });
    // The restored code is revision 1's, and the data is the snapshot's.
    expect((await call("dump", {})).body.value).toEqual(before);
    const rows = await server.ctx.db.selectFrom("app_kv").select(["key", "value"]).where("app_id", "=", appId).orderBy("key").execute();
    expect(rows).toEqual([
      { key: "a", value: '"alpha"' },
      { key: "b", value: JSON.stringify({ nested: ["ünï", 1, null] }) },
      { key: "c", value: "3" },
      { key: "pic", value: '"p"' },
    ]);
    // The app's total: the restored values, and the snapshot's (all distinct here) again (DECISIONS §9).
    expect(await server.ctx.storage.usage(appId)).toBe(2 * taken.body.snapshot.bytes);
    // What its keys cost is set back with them (migration 033).
    expect(await keptKeyBytes(server.ctx.store, appId)).toBe(await exactKeyBytes(server.ctx.store, appId));
    expect(await keptKeyBytes(server.ctx.store, appId)).toBeGreaterThan(0);
  });

  it("is content-addressed: unchanged data adds no stored values; the newest 10 are kept and what none refers to is swept", async () => {
    await call("set", { k: "big", v: "x".repeat(10_000) });
    const values = async () => Number((await server.ctx.db.selectFrom("snapshot_values").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow()).n);
    const first = await snap();
    const stored = await values();
    const second = await snap();
    expect(await values()).toBe(stored);
    expect(second.body.snapshot.bytes).toBe(first.body.snapshot.bytes);
    for (let i = 0; i < 10; i++) {
      await call("set", { k: "big", v: `y${i}`.repeat(1000) });
      await snap();
    }
    const listed = (await server.client.get(`/app/${appId}/snapshots`, { token: owner.token })).body.snapshots as { id: string }[];
    expect(listed).toHaveLength(10);
    expect(listed.map((s) => s.id)).not.toContain(first.body.snapshot.id);
    expectError(await restore(1, { snapshot: first.body.snapshot.id, dry_run: true }, 1), 404, "not_found");
    // The 10 000-byte value only the pruned two held is gone from the store.
    const big = await server.ctx.db.selectFrom("snapshot_values").select("hash").where("size", "=", 10_000 + 2).execute();
    expect(big).toEqual([]);
  });

  it("refuses by kind: unknown, foreign and malformed snapshots, a dry run without one, callers without write access", async () => {
    const other = await makeUser(server);
    const otherApp = (await server.client.post("/app", { module: source("o") }, { token: other.token })).body.id;
    const foreign = (await server.client.post(`/app/${otherApp}/snapshots`, undefined, { token: other.token })).body.snapshot.id as string;
    expectError(await restore(1, { snapshot: foreign }, 1), 404, "not_found");
    expectError(await restore(1, { snapshot: "00000000-0000-4000-8000-000000000000" }, 1), 404, "not_found");
    expectError(await restore(1, { snapshot: "nope" }, 1), 400, "invalid_id");
    expectError(await restore(1, { dry_run: true }, 1), 400, "invalid_request");
    expectError(await server.client.post(`/app/${appId}/snapshots`, undefined, { token: other.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/snapshots`, { token: other.token }), 403, "forbidden");
    expectError(await server.client.post(`/app/${appId}/snapshots`), 403, "forbidden");
    // A failed restore (stale If-Match) leaves data and code as they were.
    await call("set", { k: "keep", v: 1 });
    const id = (await snap()).body.snapshot.id as string;
    await call("set", { k: "keep", v: 2 });
    expectError(await restore(1, { snapshot: id }, 7), 412, "revision_mismatch");
    const dumped = await call("dump", {});
    expect(dumped.body.value?.kv, JSON.stringify(dumped.body)).toEqual({ keep: 2 });
  });

  it("the hourly sweep drops the values only a deleted app's snapshots held, and keeps those another app's share", async () => {
    const hashOf = async (app: string, key: string) =>
      (await server.ctx.db.selectFrom("snapshot_entries").innerJoin("app_snapshots", "app_snapshots.id", "snapshot_entries.snapshot_id").select("hash").where("app_id", "=", app).where("key", "=", key).executeTakeFirstOrThrow()).hash;
    const stored = async (hash: string) => (await server.ctx.db.selectFrom("snapshot_values").select("hash").where("hash", "=", hash).execute()).length;
    await call("set", { k: "a", v: "only the deleted app's" });
    await call("set", { k: "b", v: "in both apps" });
    expect((await snap()).status).toBe(201);
    const deleted = appId;
    const [onlyDeleted, inBoth] = [await hashOf(deleted, "a"), await hashOf(deleted, "b")];
    const other = await server.client.post("/app", { module: source("other").replace('id: "kv-app"', 'id: "kv-app-2"') }, { token: owner.token });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    appId = other.body.id;
    expect((await call("set", { k: "b", v: "in both apps" })).status).toBe(200);
    const kept = await snap();
    expect(kept.status).toBe(201);
    expect((await server.client.delete(`/app/${deleted}`, { token: owner.token })).status).toBe(200);
    expect(await stored(onlyDeleted)).toBe(1);

    expect(await server.ctx.scheduler.tick()).toContain("snapshot-value-sweep");
    expect(await stored(onlyDeleted)).toBe(0);
    expect(await stored(inBoth)).toBe(1);
    // The other app's snapshot still restores, the shared value with it.
    const restored = await restore(1, { snapshot: kept.body.snapshot.id }, 1);
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
  });
});
