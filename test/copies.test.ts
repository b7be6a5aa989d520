import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { exactKeyBytes, keptKeyBytes } from "./helpers/executor.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = (id: string) => `// A note that merely mentions id: "not-the-manifest" stays as it is.
export const manifest = {
  id: ${JSON.stringify(id)},
  displayName: "Counter",
  capabilities: { imports: ["svc:storage/kv@1.0", "svc:storage/blob@1.0"] },
  routes: { put: { access: "write" }, get: { access: "read" }, keys: { access: "read" } },
};
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    const input = await request.json();
    if (op === "put") { await env.KV.set(input.k, input.v); await env.BLOB.put(input.k, new Uint8Array([1, 2, 3, input.v.length % 256]), { contentType: "application/octet-stream" }); return Response.json({ ok: true, value: true }); }
    if (op === "get") { const b = await env.BLOB.get(input.k); return Response.json({ ok: true, value: { kv: await env.KV.get(input.k), blob: b === null ? null : [...new Uint8Array(b.data)] } }); }
    return Response.json({ ok: true, value: (await env.KV.list({})).keys });
  },
};
`;

/** Issue 16, copies: who may copy, renaming, data in one transaction, idempotency, the refusals. */
describeEachDialect("copies", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let stranger: FixtureUser;
  let appId: string;
  const copy = (id: string, body: unknown, user: FixtureUser) => server.client.post(`/app/${id}/copy`, body, { token: user.token });
  const call = (id: string, op: string, input: unknown, user: FixtureUser) => server.client.post(`/app/${id}/api/${op}`, input, { token: user.token });

  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());
  beforeEach(async () => {
    [owner, stranger] = [await makeUser(server), await makeUser(server)];
    appId = (await server.client.post("/app", { module: source("counter") }, { token: owner.token })).body.id;
    expect((await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: "never-copied" }, { token: owner.token })).status).toBe(200);
  });

  it("the owner copies under a new manifest id: a new private app whose manifest (only) is rewritten; secrets named, not copied", async () => {
    const made = await copy(appId, { manifest_id: "counter-two", display_name: 'Counter "2"' }, owner);
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(made.body).toEqual({
      ok: true,
      id: expect.any(String),
      url: `${server.config.baseUrl}/@${owner.handle}/counter-two`,
      manifestId: "counter-two",
      appName: 'Counter "2"',
      displayName: 'Counter "2"',
      revision: 1,
      sourceAppId: appId,
      copyKind: "app",
      secretsNotCopied: ["API_KEY"],
    });
    const code = (await server.client.get(`/app/${made.body.id}/source`, { token: owner.token })).body.module as string;
    expect(code).toContain('id: "counter-two"');
    expect(code).toContain('displayName: "Counter \\"2\\""');
    expect(code).toContain('id: "not-the-manifest"');
    expect(code.replace('"counter-two"', '"counter"').replace('"Counter \\"2\\""', '"Counter"')).toBe(source("counter"));
    expect((await call(made.body.id, "keys", {}, owner)).body.value).toEqual([]);
    expect((await server.client.get(`/app/${made.body.id}/secrets`, { token: owner.token })).body.names).toEqual([]);

    // The owner already holds "counter": a copy under the source's own id is a conflict.
    const conflict = expectError(await copy(appId, {}, owner), 409, "manifest_id_conflict");
    expect(conflict).toMatchObject({ existingAppId: appId, recovery: { kind: "rename" } });
  });

  it("strangers copy only public apps marked remixable, once per manifest id (duplicate_remix), never with data", async () => {
    expectError(await copy(appId, {}, stranger), 403, "forbidden");
    expect((await server.client.put(`/app/${appId}/visibility`, { visibility: "public" }, { token: owner.token })).status).toBe(200);
    expectError(await copy(appId, {}, stranger), 403, "forbidden");
    expectError(await server.client.put(`/app/${appId}/remixable`, { remixable: true }, { token: stranger.token }), 403, "forbidden");
    expect((await server.client.put(`/app/${appId}/remixable`, { remixable: true }, { token: owner.token })).body).toEqual({ ok: true, remixable: true });

    expectError(await copy(appId, { include_data: true }, stranger), 403, "copy_data_forbidden");
    const first = await copy(appId, {}, stranger);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ manifestId: "counter", sourceAppId: appId, url: `${server.config.baseUrl}/@${stranger.handle}/counter` });
    expect(first.body).not.toHaveProperty("secretsNotCopied");
    const again = expectError(await copy(appId, {}, stranger), 409, "duplicate_remix");
    expect(again).toMatchObject({ existingAppId: first.body.id, recovery: { kind: "open_existing", existing_app_id: first.body.id, existing_url: first.body.url } });
    expect((await copy(appId, { manifest_id: "counter-b" }, stranger)).status).toBe(200);
    const listed = (await server.client.get("/app", { token: stranger.token })).body.apps.map((a: { manifestId: string; role: string }) => [a.manifestId, a.role]);
    expect(listed).toEqual([
      ["counter-b", "owner"],
      ["counter", "owner"],
    ]);
    // Turning the app private again closes it to strangers.
    await server.client.put(`/app/${appId}/visibility`, { visibility: "private" }, { token: owner.token });
    expectError(await copy(appId, { manifest_id: "counter-c" }, stranger), 403, "forbidden");
  });

  it("include_data carries KV values and blobs byte for byte, and assets, in the copy's own transaction", async () => {
    for (const [k, v] of [
      ["a", "alpha"],
      ["b", "ünïcødé ✓"],
      ["c", "x".repeat(5000)],
    ]) {
      expect((await call(appId, "put", { k, v }, owner)).status).toBe(200);
    }
    const form = new FormData();
    form.set("key", "logo.png");
    form.set("file", new Blob([new Uint8Array(64).fill(9)], { type: "image/png" }), "logo.png");
    expect((await fetch(`${server.url}/app/${appId}/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${owner.token}` } })).status).toBe(201);

    const made = await copy(appId, { manifest_id: "counter-data", include_data: true }, owner);
    expect(made.body).toMatchObject({ ok: true, copiedData: { keys: 3, assets: 1 } });
    for (const k of ["a", "b", "c"]) expect((await call(made.body.id, "get", { k }, owner)).body.value).toEqual((await call(appId, "get", { k }, owner)).body.value);
    const asset = await fetch(`${server.url}/app/${made.body.id}/assets/logo.png`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(asset.status).toBe(200);
    expect(Buffer.from(await asset.arrayBuffer())).toEqual(Buffer.alloc(64, 9));
    expect(await server.ctx.storage.usage(made.body.id)).toBe(await server.ctx.storage.usage(appId));
    // Its keys cost what the source's do (migration 033), counted from the keys it holds.
    expect(await keptKeyBytes(server.ctx.store, made.body.id)).toBe(await keptKeyBytes(server.ctx.store, appId));
    expect(await keptKeyBytes(server.ctx.store, made.body.id)).toBe(await exactKeyBytes(server.ctx.store, made.body.id));
    // The copy's data is its own: writing to it leaves the source alone.
    await call(made.body.id, "put", { k: "a", v: "changed" }, owner);
    expect((await call(appId, "get", { k: "a" }, owner)).body.value.kv).toBe("alpha");
  });

  it("one idempotency key gives one app, sequential or concurrent; another body under it is a conflict", async () => {
    await call(appId, "put", { k: "a", v: "1" }, owner);
    const body = { manifest_id: "counter-once", include_data: true, idempotency_key: "k-1" };
    const first = await copy(appId, body, owner);
    expect(first.body).toMatchObject({ copiedData: { keys: 1, assets: 0 } });
    const replay = await copy(appId, body, owner);
    expect(replay.status).toBe(200);
    expect(replay.body.id).toBe(first.body.id);
    expect(replay.body).not.toHaveProperty("copiedData");
    expectError(await copy(appId, { ...body, include_data: false }, owner), 409, "idempotency_conflict");

    const racing = { manifest_id: "counter-race", include_data: true, idempotency_key: "k-2" };
    const results = await Promise.all([copy(appId, racing, owner), copy(appId, racing, owner), copy(appId, racing, owner)]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    const ids = (await server.client.get("/app", { token: owner.token })).body.apps.map((a: { manifestId: string }) => a.manifestId).sort();
    expect(ids).toEqual(["counter", "counter-once", "counter-race"]);
  });

  it("refuses by kind: unclaimed sources, too much data, bad fields, non-user credentials, unknown apps", async () => {
    const anon = await server.client.post("/app", { module: source("anon-counter") });
    expectError(await copy(anon.body.id, {}, owner), 403, "anon_not_remixable");
    expectError(await server.client.post(`/app/${anon.body.id}/copy`, {}, { token: anon.body.token }), 401, "unauthorized");
    expectError(await server.client.post(`/app/${appId}/copy`, {}), 401, "sign_in_required");
    expectError(await copy(appId, { manifest_id: "Not Kebab" }, owner), 400, "invalid_request");
    expectError(await copy(appId, { manifest_id: "fine", secret: 1 }, owner), 400, "invalid_request");
    expectError(await copy(appId, { include_data: "yes" }, owner), 400, "invalid_request");
    expectError(await copy("00000000-0000-4000-8000-000000000000", {}, owner), 404, "app_not_found");
    expectError(await copy("not-an-id", {}, owner), 400, "invalid_id");

    for (const k of ["x", "y", "z"]) await server.ctx.storage.blobPut(appId, k, Buffer.alloc(9 * 1024 * 1024, 1), "application/octet-stream");
    const tooBig = expectError(await copy(appId, { manifest_id: "counter-big", include_data: true }, owner), 413, "copy_data_too_large");
    expect(tooBig).toMatchObject({ limit: 24 * 1024 * 1024 });
    // Without data the same app copies fine, and nothing was left of the refused one.
    expect((await copy(appId, { manifest_id: "counter-big" }, owner)).status).toBe(200);
  });
});
