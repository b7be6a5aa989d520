import { afterAll, beforeAll, expect, it } from "vitest";
import { DAY, HOUR, type ManualClock } from "../src/config/clock.ts";
import type { AppEvent } from "../src/domain/apps/index.ts";
import { createAnonymousApp, expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("apps: reaper, delete, describe, icon", (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    clock = server.clock as ManualClock;
  });
  afterAll(async () => server.close());

  const rowsOf = async (appId: string) => ({
    apps: (await server.ctx.db.selectFrom("apps").select("id").where("id", "=", appId).execute()).length,
    versions: (await server.ctx.db.selectFrom("app_versions").select("revision").where("app_id", "=", appId).execute()).length,
    tokens: (await server.ctx.db.selectFrom("tokens").select("id").where("app_id", "=", appId).execute()).length,
  });

  it("the reaper removes an 8-day-old unclaimed app with everything it owns and keeps claimed ones", async () => {
    const doomed = await createAnonymousApp(server, "doomed");
    await server.client.put(`/app/${doomed.id}`, { module: moduleSource(manifestOf("doomed")) }, { token: doomed.token });
    const kept = await createAnonymousApp(server, "kept");
    const user = await makeUser(server);
    expect((await server.client.post(`/app/${kept.id}/claim`, { token: kept.token }, { token: user.token })).status).toBe(200);
    const owned = await server.client.post("/app", { module: moduleSource(manifestOf("owned")) }, { token: user.token });
    expect(await rowsOf(doomed.id)).toEqual({ apps: 1, versions: 2, tokens: 1 });

    // Just short of 7 days nothing goes.
    clock.advance(7 * DAY - HOUR);
    await server.reaper.reapOnce();
    expect((await server.client.get(`/app/${doomed.id}/source`, { token: doomed.token })).status).toBe(200);
    // A younger unclaimed app survives the pass that takes the old one.
    const young = await createAnonymousApp(server, "young");

    clock.advance(DAY + HOUR);
    // Past its 7 days the app is gone at once, before the hourly reaper gets to it.
    expectError(await server.client.get(`/app/${doomed.id}/describe`), 404, "app_not_found");
    expect(await server.ctx.apps.activeCode(doomed.id)).toBeNull();
    const removed = await server.reaper.reapOnce();
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await rowsOf(doomed.id)).toEqual({ apps: 0, versions: 0, tokens: 0 });
    expectError(await server.client.get(`/app/${doomed.id}`), 404, "app_not_found");
    // Its token is gone with it: unknown now.
    const gone = expectError(await server.client.get(`/app/${doomed.id}/source`, { token: doomed.token }), 401, "unauthorized");
    expect(gone.reason).toBe("token_unknown");

    // The user's 7-day token expired with the clock; a fresh one reads the apps that stayed.
    const fresh = (await server.ctx.tokens.mintUserToken(user.id, {})).token;
    expect((await server.client.get(`/app/${kept.id}/source`, { token: fresh })).status).toBe(200);
    expect((await server.client.get(`/app/${owned.body.id}/source`, { token: fresh })).status).toBe(200);
    expect((await server.client.get(`/app/${young.id}/source`, { token: young.token })).status).toBe(200);
    expect(await server.reaper.reapOnce()).toBe(0);
  });

  it("the reaper leaves an app that was claimed after it picked it", async () => {
    const app = await createAnonymousApp(server, "late-claim");
    const user = await makeUser(server);
    clock.advance(7 * DAY - HOUR);
    // The reaper looks from a clock an hour ahead (another instance's), then the owner claims in time.
    const reaperNow = clock.now() + 2 * HOUR;
    expect(await server.ctx.apps.expiredUnclaimed(reaperNow)).toContain(app.id);
    expect((await server.client.post(`/app/${app.id}/claim`, { token: app.token }, { token: user.token })).status).toBe(200);
    expect(await server.ctx.apps.deleteById(app.id, reaperNow)).toBe(false);
    expect((await rowsOf(app.id)).apps).toBe(1);
  });

  it("the reaper runs as a scheduler job, once per hour across instances", async () => {
    const app = await createAnonymousApp(server, "timed");
    clock.advance(8 * DAY);
    expect(await server.ctx.scheduler.tick()).toContain("apps.reaper");
    expect((await rowsOf(app.id)).apps).toBe(0);
    // The period is claimed: a second tick in the same hour does not run it again.
    expect(await server.ctx.scheduler.tick()).not.toContain("apps.reaper");
  });

  it("DELETE /app/{id}: the owner removes the app and its rows; others are refused", async () => {
    const user = await makeUser(server);
    const stranger = await makeUser(server);
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("to-delete")) }, { token: user.token });
    const id: string = created.body.id;
    expectError(await server.client.delete(`/app/${id}`, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.delete(`/app/${id}`), 403, "forbidden");
    expectError(await server.client.delete(`/app/${id}`, { cookie: user.cookie }), 403, "forbidden");
    expectError(await server.client.delete(`/app/not-a-uuid`, { token: user.token }), 400, "invalid_id");

    const res = await server.client.delete(`/app/${id}`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect(await rowsOf(id)).toEqual({ apps: 0, versions: 0, tokens: 0 });
    expectError(await server.client.delete(`/app/${id}`, { token: user.token }), 404, "app_not_found");
    expect((await server.client.get("/app", { token: user.token })).body.apps).toEqual([]);
    // The manifest id is free again: a new create is a new app.
    const again = await server.client.post("/app", { module: moduleSource(manifestOf("to-delete")) }, { cookie: user.cookie, headers: { origin: server.config.baseUrl } });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(id);

    // An unclaimed app has no owner to delete it: its token may edit it, not delete it.
    const anon = await createAnonymousApp(server, "anon-delete");
    const refused = expectError(await server.client.delete(`/app/${anon.id}`, { token: anon.token }), 403, "forbidden");
    expect(refused.message).toContain("unclaimed");
  });

  it("GET /app/{id}/describe: name, description, icon, url and operations with access and schemas", async () => {
    const manifest = {
      id: "described",
      displayName: "Described app",
      description: "Keeps notes.",
      icon: { emoji: "📝", bg: "#ffcc00" },
      routes: {
        list: { title: "List notes", access: "read", output: { type: "array" } },
        add: { description: "Add a note", input: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
      },
    };
    const anon = await server.client.post("/app", { module: moduleSource(manifest) });
    const res = await server.client.get(`/app/${anon.body.id}/describe`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      id: anon.body.id,
      manifestId: "described",
      name: "Described app",
      description: "Keeps notes.",
      icon: { emoji: "📝", bg: "#ffcc00" },
      iconUrl: `${server.config.baseUrl}/app/${anon.body.id}/icon.svg`,
      url: `${server.config.baseUrl}/app/${anon.body.id}`,
      revision: 1,
      role: "visitor",
      operations: [
        { id: "list", title: "List notes", description: null, access: "read", input: null, output: { type: "array" } },
        {
          id: "add",
          title: null,
          description: "Add a note",
          access: "write",
          input: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
          output: null,
        },
      ],
    });
    expect((await server.client.get(`/app/${anon.body.id}/describe`, { token: anon.body.token })).body.role).toBe("app-token");

    const user = await makeUser(server);
    const owned = await server.client.post("/app", { module: moduleSource(manifestOf("owned-described")) }, { token: user.token });
    const mine = await server.client.get(`/app/${owned.body.id}/describe`, { token: user.token });
    expect(mine.body).toMatchObject({ role: "owner", url: `${server.config.baseUrl}/@${user.handle}/owned-described`, icon: null });
    expectError(await server.client.get(`/app/${owned.body.id}/describe`), 403, "forbidden");
    expectError(await server.client.get(`/app/zzz/describe`), 400, "invalid_id");
  });

  it("PUT /app/{id}/icon: the owner sets or resets the icon; bad icons are 400 invalid_icon", async () => {
    const user = await makeUser(server);
    const created = await server.client.post("/app", { module: moduleSource({ ...manifestOf("iconed"), icon: { emoji: "🐢", bg: "#00ff00" } }) }, { token: user.token });
    const id: string = created.body.id;
    const set = await server.client.put(`/app/${id}/icon`, { emoji: "🦊🐻", bg: "#123" }, { token: user.token });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ ok: true, icon: { emoji: "🦊", bg: "#123" }, iconUrl: `${server.config.baseUrl}/app/${id}/icon.svg` });
    const svg = await server.client.get(`/app/${id}/icon.svg`);
    expect(svg.text).toContain("🦊");
    expect(svg.text).toContain("#123");
    // The override survives source writes; the responses show it.
    const put = await server.client.put(`/app/${id}`, { module: moduleSource({ ...manifestOf("iconed"), icon: { emoji: "🐢", bg: "#00ff00" } }) }, { token: user.token });
    expect(put.body.icon).toEqual({ emoji: "🦊", bg: "#123" });

    const reset = await server.client.put(`/app/${id}/icon`, null, { token: user.token });
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    expect(reset.body.icon).toEqual({ emoji: "🐢", bg: "#00ff00" });

    expectError(await server.client.put(`/app/${id}/icon`, { emoji: "🙂", bg: "blue" }, { token: user.token }), 400, "invalid_icon");
    expectError(await server.client.put(`/app/${id}/icon`, { emoji: "x", bg: "#fff" }, { token: user.token }), 400, "invalid_icon");
    expectError(await server.client.put(`/app/${id}/icon`, { emoji: "🙂" }, { token: user.token }), 400, "invalid_request");
    expectError(await server.client.put(`/app/${id}/icon`, { emoji: "🙂", bg: "#fff", url: "x" }, { token: user.token }), 400, "invalid_request");
    const stranger = await makeUser(server);
    expectError(await server.client.put(`/app/${id}/icon`, { emoji: "🙂", bg: "#fff" }, { token: stranger.token }), 403, "forbidden");

    const anon = await createAnonymousApp(server, "anon-icon");
    expectError(await server.client.put(`/app/${anon.id}/icon`, { emoji: "🙂", bg: "#fff" }, { token: anon.token }), 403, "forbidden");
  });

  it("tells listeners about every publish (with warnings) and every removal; a failing listener fails nothing", async () => {
    const seen: AppEvent[] = [];
    server.ctx.apps.events.on((event) => {
      seen.push(event);
    });
    server.ctx.apps.events.on(() => {
      throw new Error("a broken listener");
    });
    const user = await makeUser(server);
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("evented")), ui: 'svc.call("nope")' }, { token: user.token });
    expect(created.status).toBe(201);
    expect(created.headers.get("etag")).toBe('"1"');
    const id: string = created.body.id;
    await server.client.put(`/app/${id}`, { module: moduleSource(manifestOf("evented")) }, { token: user.token });
    await server.client.patch(`/app/${id}/source`, { edits: [{ bucket: "module", old_string: "Op hello", new_string: "Op hi" }] }, { token: user.token, headers: { "if-match": '"2"' } });
    expect((await server.client.delete(`/app/${id}`, { token: user.token })).status).toBe(200);
    // A write of an app its create's warm-up ran carries the build staged for it (Stager): not this test's concern.
    const mine = seen.filter((e) => e.appId === id).map((e) => (e.type === "published" ? { type: e.type, appId: e.appId, revision: e.revision, warnings: e.warnings } : e));
    expect(mine).toEqual([
      { type: "published", appId: id, revision: 1, warnings: [expect.stringContaining('"nope"')] },
      { type: "published", appId: id, revision: 2, warnings: [] },
      { type: "published", appId: id, revision: 3, warnings: [] },
      { type: "deleted", appId: id },
    ]);
  });

  it("every app route appears in the OpenAPI document", async () => {
    const doc = await server.client.get("/.well-known/openapi.json");
    expect(doc.status).toBe(200);
    const paths = Object.keys(doc.body.paths);
    for (const path of ["/app", "/app/{id}", "/app/{id}/source", "/app/{id}/claim", "/app/{id}/describe", "/app/{id}/icon.svg", "/app/{id}/icon"]) {
      expect(paths, path).toContain(path);
    }
    expect(Object.keys(doc.body.paths["/app/{id}"])).toEqual(expect.arrayContaining(["get", "put", "delete"]));
  });
});
