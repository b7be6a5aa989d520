import { existsSync, mkdirSync, mkdtempSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createAnonymousApp, expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { fillQueue, settle } from "./helpers/builds.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/** A module that imports `imports` (lines of import statements) and answers `op` with `expr`. */
function npmModule(id: string, imports: string, expr: string): string {
  return `${imports}
export const manifest = ${JSON.stringify(manifestOf(id, ["run"]))};
export default {
  async fetch(request) {
    return Response.json({ ok: true, value: ${expr} });
  },
};
`;
}

const GREET = npmModule("greeter", `import { greet } from "npm:greet@^1.0.0";`, `greet("ada")`);



describeEachDialect("builds: npm imports bundled by durable jobs", (dialect) => {
  let server: TestServer;
  let registry: NpmRegistry;
  beforeAll(async () => {
    registry = await startNpmRegistry();
    server = await startServer({ dialect, env: { NPM_REGISTRY_URL: registry.url, NPM_TOKEN: "registry-secret", BUILD_RETRY_MS: "20" } });
  });
  afterAll(async () => {
    await server.close();
    await registry.close();
  });

  it("an anonymous create with npm imports answers 202 with the build status and the token, then publishes and runs the package", async () => {
    const res = await server.client.post("/app", { module: GREET });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const status = res.body;
    expect(status).toMatchObject({ ok: true, intent: "create", lockState: "unresolved", attempts: expect.any(Number) });
    expect(["queued", "resolving", "building", "validating", "published"]).toContain(status.state);
    for (const field of ["buildId", "sourceEtag", "statusUrl", "acceptedAt", "updatedAt", "queueDeadline", "deadline", "inspectionExpiresAt", "appId", "token"]) {
      expect(status[field], field).toEqual(expect.any(String));
    }
    expect(status.statusUrl).toBe(`${server.config.baseUrl}/api/v1/builds/${status.buildId}`);
    expect(res.headers.get("location")).toBe(status.statusUrl);
    expect(status.idempotencyExpiresAt).toBeNull();
    // No runnable app until the build publishes.
    if (status.state !== "published") expectError(await server.client.post(`/app/${status.appId}/api/run`, {}, { token: status.token }), 404, "app_not_found");

    const done = await settle(server, status, status.token);
    expect(done).toMatchObject({
      state: "published",
      revision: 1,
      lockState: "locked",
      resolvedDependencies: { server: { greet: "1.2.0" }, client: {} },
      url: `${server.config.baseUrl}/app/${status.appId}`,
    });
    expect(done.lockDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(done.finishedAt).toEqual(expect.any(String));
    expect(done.token).toBeUndefined();
    const ran = await server.client.post(`/app/${status.appId}/api/run`, {}, { token: status.token });
    expect(ran.body, JSON.stringify(ran.body)).toEqual({ ok: true, value: "hello, ada (greet 1.2.0)" });
    // The registry token went to the registry, which is its origin.
    expect(registry.requests.some((r) => r.authorization === "Bearer registry-secret")).toBe(true);
  });

  it("the same source again publishes at once from the cached bundle (201), without asking the registry", async () => {
    const before = registry.requests.length;
    const res = await server.client.post("/app", { module: GREET });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(registry.requests.length).toBe(before);
    const ran = await server.client.post(`/app/${res.body.id}/api/run`, {}, { token: res.body.token });
    expect(ran.body).toEqual({ ok: true, value: "hello, ada (greet 1.2.0)" });
  });

  it("CommonJS packages, a built-in required by its bare name, two versions of one package in the tree, and a subpath", async () => {
    const user = await makeUser(server);
    const module = npmModule(
      "mixed",
      `import relay from "npm:cjs-events@1";
import { shout } from "npm:shout@1.0.0";
import { loud } from "npm:greet@1.0.0/loud";
import { greet } from "npm:greet@1.0.0";`,
      `[relay("hi"), shout("bo"), loud("x"), greet("y")]`,
    );
    const res = await server.client.post("/app", { module }, { token: user.token });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.token).toBeUndefined();
    const done = await settle(server, res.body, user.token);
    expect(done, JSON.stringify(done)).toMatchObject({ state: "published", resolvedDependencies: { server: { "cjs-events": "1.0.0", shout: "1.0.0", greet: "1.0.0" } } });
    const ran = await server.client.post(`/app/${done.appId}/api/run`, {}, { token: user.token });
    expect(ran.body, JSON.stringify(ran.body)).toEqual({ ok: true, value: ["aGk=", "HI BO (GREET 2.0.0)!", "HELLO, X", "hello, y (greet 1.0.0)"] });
  });

  it("imports no build can serve are refused at the write with the specifier and line", async () => {
    const bare = await server.client.post("/app", { module: npmModule("bare", `\nimport x from "lodash";`, "1") });
    expect(expectError(bare, 400, "app_build_unsupported").details).toEqual({ specifier: "lodash", line: 2, column: 14 });
    const url = await server.client.post("/app", { module: npmModule("url", `import x from "https://esm.sh/lodash";`, "1") });
    expect(expectError(url, 400, "app_build_unsupported").details).toMatchObject({ specifier: "https://esm.sh/lodash", line: 1 });
    const node = await server.client.post("/app", { module: npmModule("node", `import fs from "node:fs";`, "1") });
    expect(expectError(node, 400, "app_build_unsupported").details).toMatchObject({ specifier: "node:fs", line: 1 });
    const range = await server.client.post("/app", { module: npmModule("range", `import x from "npm:greet@not-a-range!";`, "1") });
    expectError(range, 400, "app_build_unsupported");
  });

  it("a range no version satisfies fails the build with 422's kind, naming the specifier and line", async () => {
    const res = await server.client.post("/app", { module: npmModule("nover", `import { greet } from "npm:greet@^9";`, "greet('x')") });
    expect(res.status).toBe(202);
    const done = await settle(server, res.body, res.body.token);
    expect(done.state).toBe("failed");
    expect(done.error).toMatchObject({ kind: "app_build_failed", retryable: false, details: { specifier: "npm:greet@^9", line: 1 } });
    // Nothing was created.
    expectError(await server.client.post(`/app/${done.appId}/api/run`, {}, { token: res.body.token }), 404, "app_not_found");
  });

  it("a second write during a build supersedes the first; only the second publishes", async () => {
    const app = await createAnonymousApp(server, "superseding");
    const held = registry.hold();
    const first = await server.client.put(`/app/${app.id}`, { module: npmModule("superseding", `import { greet } from "npm:greet@^1.0.0";`, `"first " + greet("a")`) }, { token: app.token });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(first.body).toMatchObject({ intent: "update", appId: app.id, activeRevision: 1, sourceEtag: '"1"' });
    await held.reached;
    const second = await server.client.put(`/app/${app.id}`, { module: npmModule("superseding", `import { greet } from "npm:greet@^1.0.0";`, `"second " + greet("b")`) }, { token: app.token });
    expect(second.status).toBe(202);
    const firstNow = await server.client.get(new URL(first.body.statusUrl).pathname, { token: app.token });
    expect(firstNow.body).toMatchObject({ state: "superseded" });
    expect(firstNow.body.finishedAt).toEqual(expect.any(String));
    held.release();
    expect(await settle(server, second.body, app.token)).toMatchObject({ state: "published", revision: 2 });
    expect((await server.client.get(new URL(first.body.statusUrl).pathname, { token: app.token })).body.state).toBe("superseded");
    expect((await server.client.post(`/app/${app.id}/api/run`, {}, { token: app.token })).body).toEqual({ ok: true, value: "second hello, b (greet 1.2.0)" });
  });

  it("the registry down: the build retries, then fails app_build_unavailable (retryable) and the app keeps its revision", async () => {
    const app = await createAnonymousApp(server, "offline");
    registry.down = true;
    try {
      const res = await server.client.put(`/app/${app.id}`, { module: npmModule("offline", `import { greet } from "npm:greet@1";`, `greet("z")`) }, { token: app.token });
      expect(res.status).toBe(202);
      const done = await settle(server, res.body, app.token);
      expect(done).toMatchObject({ state: "failed", attempts: 3, error: { kind: "app_build_unavailable", retryable: true } });
    } finally {
      registry.down = false;
    }
    const read = await server.client.get(`/app/${app.id}/source`, { token: app.token });
    expect(read.body.revision).toBe(1);
    expect((await server.client.post(`/app/${app.id}/api/hello`, {}, { token: app.token })).body).toEqual({ ok: true, value: { op: "hello" } });
  });

  it("refuses a tarball that does not match its integrity, a symlink out of a package, and one past 20 MiB", async () => {
    const cases: [string, string, RegExp][] = [
      ["mismatch", `import m from "npm:mismatch@1";`, /does not match its integrity/],
      ["linky", `import l from "npm:linky@1";`, /data\.js/],
      ["huge", `import h from "npm:huge@1";`, /20 MiB cap/],
      ["throws-at-load", `import "npm:throws-at-load@1";`, /does not load.*refuses to load/s],
    ];
    for (const [name, imports, message] of cases) {
      const res = await server.client.post("/app", { module: npmModule(`bad-${name}`, imports, "1") });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const done = await settle(server, res.body, res.body.token);
      expect(done.state, name).toBe("failed");
      expect(done.error.kind, name).toBe("app_build_failed");
      expect(done.error.message, name).toMatch(message);
      expect(done.error.message).not.toContain("OUTSIDE THE PACKAGE");
    }
  });

  it("never runs install scripts", async () => {
    const marker = join(mkdtempSync(join(tmpdir(), "brickyard-marker-")), "ran");
    process.env.BRICKYARD_POSTINSTALL_MARKER = marker;
    const res = await server.client.post("/app", { module: npmModule("scripts", `import p from "npm:postinstall@1";`, "p.value") });
    const done = await settle(server, res.body, res.body.token);
    expect(done.state).toBe("published");
    expect((await server.client.post(`/app/${done.appId}/api/run`, {}, { token: res.body.token })).body).toEqual({ ok: true, value: "installed without running scripts" });
    expect(existsSync(marker)).toBe(false);
  });

  it("a writer who loses write access before publish publishes nothing: app_build_authority_lost", async () => {
    const app = await createAnonymousApp(server, "claimed-meanwhile");
    const user = await makeUser(server);
    const held = registry.hold();
    const res = await server.client.put(`/app/${app.id}`, { module: npmModule("claimed-meanwhile", `import { greet } from "npm:greet@1";`, `"lost " + greet("q")`) }, { token: app.token });
    expect(res.status).toBe(202);
    await held.reached;
    // Claimed by a user: the app token that wrote the source no longer works.
    expect((await server.client.post(`/app/${app.id}/claim`, { token: app.token }, { token: user.token })).status).toBe(200);
    held.release();
    const done = await settle(server, res.body, user.token);
    expect(done).toMatchObject({ state: "failed", error: { kind: "app_build_authority_lost", retryable: false } });
    expect((await server.client.get(`/app/${app.id}/source`, { token: user.token })).body.revision).toBe(1);
  });

  it("deleting the app cancels its build", async () => {
    const user = await makeUser(server);
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("doomed")) }, { token: user.token });
    const held = registry.hold();
    const res = await server.client.put(`/app/${created.body.id}`, { module: npmModule("doomed", `import { greet } from "npm:greet@1";`, `"doomed " + greet("q")`) }, { token: user.token });
    await held.reached;
    expect((await server.client.delete(`/app/${created.body.id}`, { token: user.token })).status).toBe(200);
    held.release();
    expect((await settle(server, res.body, user.token)).state).toBe("canceled");
  });

  it("edits rebuild (PATCH answers 202); restoring a built revision publishes its bundle at once", async () => {
    const user = await makeUser(server);
    const created = await server.client.post("/app", { module: npmModule("editable", `import { greet } from "npm:greet@1";`, `"v1 " + greet("e")`) }, { token: user.token });
    const id = (await settle(server, created.body, user.token)).appId;
    const patched = await server.client.patch(
      `/app/${id}/source`,
      { edits: [{ bucket: "module", old_string: `"v1 "`, new_string: `"v2 "` }] },
      { token: user.token, headers: { "if-match": '"1"' } },
    );
    expect(patched.status, JSON.stringify(patched.body)).toBe(202);
    expect(await settle(server, patched.body, user.token)).toMatchObject({ state: "published", revision: 2, resolvedDependencies: { server: { greet: "1.2.0" } } });
    expect((await server.client.post(`/app/${id}/api/run`, {}, { token: user.token })).body.value).toBe("v2 hello, e (greet 1.2.0)");
    const restored = await server.client.post(`/app/${id}/versions/1/restore`, {}, { token: user.token, headers: { "if-match": '"2"' } });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body).toMatchObject({ revision: 3, restoredFrom: 1 });
    expect((await server.client.post(`/app/${id}/api/run`, {}, { token: user.token })).body.value).toBe("v1 hello, e (greet 1.2.0)");
  });

  it("a full queue refuses anonymous builds with 503 app_build_capacity; signed-in writers still get in", async () => {
    await fillQueue(server, 50, "null");
    try {
      const module = npmModule("crowded", `import { greet } from "npm:greet@1";`, `"crowded " + greet("c")`);
      expectError(await server.client.post("/app", { module }), 503, "app_build_capacity");
      const user = await makeUser(server);
      expect((await server.client.post("/app", { module }, { token: user.token })).status).toBe(202);
    } finally {
      await server.ctx.db.deleteFrom("builds").where("lease_holder", "=", "test").execute();
    }
  });

  it("a build's status is readable only by who may write the app: 404 before the app exists, 403 after", async () => {
    const held = registry.hold();
    const res = await server.client.post("/app", { module: GREET.replace("ada", "eve") });
    const path = new URL(res.body.statusUrl).pathname;
    const stranger = await makeUser(server);
    await held.reached;
    expect((await server.client.get(path, { token: res.body.token })).status).toBe(200);
    expectError(await server.client.get(path, { token: stranger.token }), 404, "not_found");
    expectError(await server.client.get(path), 404, "not_found");
    held.release();
    expect((await settle(server, res.body, res.body.token)).state).toBe("published");
    expectError(await server.client.get(path, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.get(path), 403, "forbidden");
    expectError(await server.client.get("/api/v1/builds/not-a-uuid", { token: res.body.token }), 400, "invalid_id");
    expectError(await server.client.get(`/api/v1/builds/${crypto.randomUUID()}`, { token: res.body.token }), 404, "not_found");
  });

  it("a copy of an app with npm imports is built (intent copy) with the source's versions; its data comes over when it publishes", async () => {
    const user = await makeUser(server);
    const module = `import { greet } from "npm:greet@^1.0.0";
export const manifest = {
  id: "copy-source",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { put: { access: "write" }, get: { access: "read" } },
};
export default {
  async fetch(request, env) {
    if (request.headers.get("x-svc-op") === "put") { await env.KV.set("who", "kept"); return Response.json({ ok: true, value: true }); }
    return Response.json({ ok: true, value: greet(String(await env.KV.get("who"))) });
  },
};
`;
    const created = await settle(server, (await server.client.post("/app", { module }, { token: user.token })).body, user.token);
    expect(created.state).toBe("published");
    await server.client.post(`/app/${created.appId}/api/put`, {}, { token: user.token });
    const copy = await server.client.post(`/app/${created.appId}/copy`, { manifest_id: "copy-target", include_data: true }, { token: user.token });
    expect(copy.status, JSON.stringify(copy.body)).toBe(202);
    expect(copy.body).toMatchObject({ intent: "copy" });
    expect(copy.body.appId).not.toBe(created.appId);
    const done = await settle(server, copy.body, user.token);
    expect(done).toMatchObject({ state: "published", revision: 1, resolvedDependencies: { server: { greet: "1.2.0" } } });
    const ran = await server.client.post(`/app/${done.appId}/api/get`, {}, { token: user.token });
    expect(ran.body, JSON.stringify(ran.body)).toEqual({ ok: true, value: "hello, kept (greet 1.2.0)" });
    const listed = (await server.client.get("/app", { token: user.token })).body.apps.find((a: { id: string }) => a.id === done.appId);
    expect(listed).toMatchObject({ manifestId: "copy-target" });
  });

  it("the sweep drops bundles and cached tarballs no kept revision runs, and keeps the rest", async () => {
    const kept = await server.client.post("/app", { module: GREET.replace("ada", "swept") });
    expect((await settle(server, kept.body, kept.body.token)).state).toBe("published");
    const cache = join(server.config.dataDir, "npm-cache");
    const orphanFile = join(cache, `${"ab".repeat(64)}.tgz`);
    writeFileSync(orphanFile, "stale");
    utimesSync(orphanFile, new Date("2020-01-01"), new Date("2020-01-01"));
    await server.ctx.db
      .insertInto("build_bundles")
      .values({ input_digest: "orphan", bundle: "export default {}", lock: JSON.stringify({ direct: {}, graph: {} }), lock_digest: "x", node_builtins: 0, size_bytes: 17, created_at: 0 })
      .execute();
    // A build folder a crash left a day ago goes; one of a build under way stays.
    const left = join(server.config.dataDir, "builds", "5b0f3c3e-7a59-4e0e-9d54-0d6f5a7f0c11");
    const running = join(server.config.dataDir, "builds", "0c7d2a51-8f0e-4f59-9a51-3e2b1d4c5a6f");
    for (const folder of [left, running]) mkdirSync(join(folder, "node_modules", "big"), { recursive: true });
    writeFileSync(join(left, "node_modules", "big", "blob.bin"), Buffer.alloc(1024));
    utimesSync(left, new Date("2020-01-01"), new Date("2020-01-01"));
    const tarballsBefore = readdirSync(cache).length;
    const swept = await server.ctx.builds.sweep();
    expect(swept.bundles).toBeGreaterThanOrEqual(1);
    expect(swept.tarballs).toBe(1);
    expect([swept.folders, existsSync(left), existsSync(running)]).toEqual([1, false, true]);
    expect(existsSync(orphanFile)).toBe(false);
    expect(readdirSync(cache).length).toBe(tarballsBefore - 1);
    expect(await server.ctx.db.selectFrom("build_bundles").select("input_digest").where("input_digest", "=", "orphan").executeTakeFirst()).toBeUndefined();
    // Every bundle a kept revision names is still there.
    const used = await server.ctx.db.selectFrom("app_versions").select("build_digest").where("build_digest", "is not", null).execute();
    expect(used.length).toBeGreaterThan(0);
    for (const { build_digest } of used) {
      expect(await server.ctx.db.selectFrom("build_bundles").select("input_digest").where("input_digest", "=", build_digest ?? "").executeTakeFirst()).toBeDefined();
    }
  });

  it("a build no runner started before its queue deadline (10 minutes) ends expired", async () => {
    const user = await makeUser(server);
    const actor = JSON.stringify({ kind: "user", userId: user.id });
    const eleven = Date.now() - 11 * 60 * 1000;
    const [id] = await fillQueue(server, 1, actor, { module: GREET, lease_holder: null, lease_until: null, accepted_at: eleven, updated_at: eleven, deadline: eleven + 30 * 60 * 1000 });
    server.ctx.builds.runner.kick();
    const res = await server.client.get(`/api/v1/builds/${id}`, { token: user.token, headers: { prefer: "wait=10" } });
    expect(res.body).toMatchObject({ state: "expired", error: { kind: "app_build_expired", retryable: false } });
  });

  it("a person follows a build on its page: building, then published with its packages and a link to the app", async () => {
    const user = await makeUser(server);
    const stranger = await makeUser(server);
    const held = registry.hold();
    const res = await server.client.post("/app", { module: GREET.replace("ada", "page") }, { token: user.token });
    await held.reached;
    const view = (cookie: string) => fetch(`${server.url}/builds/${res.body.buildId}`, { headers: { cookie, accept: "text/html" } });
    const building = await view(user.cookie);
    expect(building.status).toBe(200);
    expect(await building.text()).toContain("Building…");
    held.release();
    await settle(server, res.body, user.token);
    const published = await (await view(user.cookie)).text();
    expect(published).toContain("<h1>Published</h1>");
    expect(published).toContain(`href="/apps/${res.body.appId}"`);
    expect(published).toContain("greet</span> 1.2.0");
    const denied = await view(stranger.cookie);
    expect(denied.status).toBe(403);
    expect(await denied.text()).not.toContain("greet");
  });
});
