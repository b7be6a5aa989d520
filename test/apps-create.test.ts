import { afterAll, beforeAll, expect, it } from "vitest";
import { DAY } from "../src/config/clock.ts";
import { createAnonymousApp, expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

// App ids are UUID version 7: time first, so a service's apps append to the indexes they key.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const millisOf = (id: string) => parseInt(id.replace(/-/g, "").slice(0, 12), 16);

describeEachDialect("apps: create and upsert", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());

  it("anonymous create returns 201 with a one-time svc_app_ token, a 7-day expiry and claimed:false", async () => {
    const manifest = manifestOf("todo-list", ["add", "list"], {
      displayName: "Todo list",
      version: "1.2.0",
      capabilities: { imports: ["svc:storage/kv@1.0"], exports: ["add", "list"], origins: ["https://api.example.com"] },
    });
    const before = Date.now();
    const res = await server.client.post("/app", { module: moduleSource(manifest), ui: "document.getElementById('app').textContent = 'hi';", styles: "body{}" });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const body = res.body;
    expect(body.id).toMatch(UUID);
    expect(millisOf(body.id)).toBeGreaterThanOrEqual(before);
    expect(millisOf(body.id)).toBeLessThanOrEqual(Date.now());
    expect(body.token).toMatch(/^svc_app_[0-9A-Za-z]{49}$/);
    expect(body).toMatchObject({
      ok: true,
      manifestId: "todo-list",
      displayName: "Todo list",
      url: `${server.config.baseUrl}/app/${body.id}`,
      claimed: false,
      icon: null,
      revision: 1,
      version: "1.2.0",
      capabilities: { imports: ["svc:storage/kv@1.0"], exports: ["add", "list"], origins: ["https://api.example.com"] },
    });
    expect(Date.parse(body.expiresAt)).toBe(server.clock.now() + 7 * DAY);
    expect(body.warnings).toBeUndefined();
    expect(body.pairing).toBeUndefined();

    // The token works for this app's source; the plaintext is never shown again.
    const source = await server.client.get(`/app/${body.id}/source`, { token: body.token });
    expect(source.status).toBe(200);
    expect(source.text).not.toContain(body.token);
  });

  it("defaults displayName to the manifest id and exports to the route keys", async () => {
    const { body } = await createAnonymousApp(server, "plain-app");
    expect(body.displayName).toBe("plain-app");
    expect(body.capabilities).toEqual({ imports: [], exports: ["hello"], origins: [] });
    expect(body.version).toBe("rev-1");
  });

  it("accepts pair and label on anonymous creates (pairing itself is wired by the pairing issue)", async () => {
    const res = await server.client.post("/app", { module: moduleSource(manifestOf("paired-app")), pair: true, label: "My agent" });
    expect(res.status).toBe(201);
    const long = await server.client.post("/app", { module: moduleSource(manifestOf("paired-app")), pair: true, label: "x".repeat(81) });
    expectError(long, 400, "invalid_request");
  });

  it("authenticated create is an upsert by (user, manifest id): 201 then 200 with the same id and revision + 1", async () => {
    const user = await makeUser(server);
    const first = await server.client.post("/app", { module: moduleSource(manifestOf("notes")) }, { token: user.token });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toMatchObject({ claimed: true, revision: 1, url: `${server.config.baseUrl}/@${user.handle}/notes` });
    expect(first.body.token).toBeUndefined();
    expect(first.body.expiresAt).toBeUndefined();

    const second = await server.client.post(
      "/app",
      { module: moduleSource(manifestOf("notes", ["hello", "bye"], { displayName: "Notes 2" })), pair: true, label: "ignored" },
      { token: user.token },
    );
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body).toMatchObject({ id: first.body.id, revision: 2, displayName: "Notes 2" });
    expect(second.body.pairing).toBeUndefined();

    // By session cookie too (with Origin, as every cookie mutation needs).
    const third = await server.client.post("/app", { module: moduleSource(manifestOf("notes")) }, { cookie: user.cookie, headers: { origin: server.config.baseUrl } });
    expect(third.status).toBe(200);
    expect(third.body).toMatchObject({ id: first.body.id, revision: 3 });

    // Another manifest id is another app; another user with the same manifest id is another app.
    const other = await server.client.post("/app", { module: moduleSource(manifestOf("notes-two")) }, { token: user.token });
    expect(other.status).toBe(201);
    expect(other.body.id).not.toBe(first.body.id);
    const someoneElse = await makeUser(server);
    const theirs = await server.client.post("/app", { module: moduleSource(manifestOf("notes")) }, { token: someoneElse.token });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(first.body.id);
  });

  it("concurrent authenticated creates of one manifest id end as one app", async () => {
    const user = await makeUser(server);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => server.client.post("/app", { module: moduleSource(manifestOf("racy")) }, { token: user.token })),
    );
    const ids = new Set(results.map((r) => r.body.id));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(ids.size).toBe(1);
    const revisions = results.map((r) => r.body.revision).sort((a, b) => a - b);
    expect(revisions).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("refuses app and render tokens, and cookie creates without Origin", async () => {
    const created = await createAnonymousApp(server, "token-holder");
    const res = await server.client.post("/app", { module: moduleSource(manifestOf("second")) }, { token: created.token });
    expectError(res, 401, "unauthorized");
    const user = await makeUser(server);
    const noOrigin = await server.client.post("/app", { module: moduleSource(manifestOf("x")) }, { cookie: user.cookie });
    expectError(noOrigin, 403, "forbidden");
    const bad = await server.client.post("/app", { module: moduleSource(manifestOf("x")) }, { token: "svc_user_nope" });
    expectError(bad, 401, "unauthorized");
  });

  it("validates the body: module required, types exact, unknown properties rejected", async () => {
    expectError(await server.client.post("/app", {}), 400, "invalid_request");
    expectError(await server.client.post("/app", { module: 42 }), 400, "invalid_request");
    expectError(await server.client.post("/app", { module: moduleSource(manifestOf("a")), ui: null }), 400, "invalid_request");
    expectError(await server.client.post("/app", { module: moduleSource(manifestOf("a")), pair: "yes" }), 400, "invalid_request");
    const extra = expectError(await server.client.post("/app", { module: moduleSource(manifestOf("a")), name: "x" }), 400, "invalid_request");
    expect(extra.message).toContain("name");
    expectError(await server.client.post("/app", undefined, { raw: "{not json" }), 400, "invalid_request");
  });

  it("caps module and ui at 256 KiB with 413 and a shrink recovery", async () => {
    const big = moduleSource(manifestOf("big")) + `\n// ${"x".repeat(256 * 1024)}`;
    const mod = expectError(await server.client.post("/app", { module: big }), 413, "module_too_large");
    expect(mod.recovery).toMatchObject({ kind: "shrink", field: "module", cap_bytes: 262144, size_bytes: Buffer.byteLength(big) });
    const ui = expectError(await server.client.post("/app", { module: moduleSource(manifestOf("big")), ui: "x".repeat(256 * 1024 + 1) }), 413, "ui_too_large");
    expect(ui.recovery).toMatchObject({ kind: "shrink", field: "ui", size_bytes: 262145, cap_bytes: 262144 });
    const styles = expectError(await server.client.post("/app", { module: moduleSource(manifestOf("big")), styles: "s".repeat(256 * 1024 + 1) }), 413, "payload_too_large");
    expect(styles.recovery).toMatchObject({ kind: "shrink", field: "styles" });
    // Exactly at the cap is fine.
    const atCap = moduleSource(manifestOf("at-cap"));
    const padded = atCap + "/" + "/" + "y".repeat(256 * 1024 - Buffer.byteLength(atCap) - 2);
    expect(Buffer.byteLength(padded)).toBe(256 * 1024);
    expect((await server.client.post("/app", { module: padded })).status).toBe(201);
  });
});
