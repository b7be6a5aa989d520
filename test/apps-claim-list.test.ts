import { afterAll, beforeAll, expect, it } from "vitest";
import { MINUTE } from "../src/config/clock.ts";
import type { ManualClock } from "../src/config/clock.ts";
import { createAnonymousApp, expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("apps: claim, canonical URLs and listing", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());

  it("claim moves ownership, revokes the app token (401 token_revoked_post_claim + pair), clears expiresAt", async () => {
    const app = await createAnonymousApp(server, "claim-me");
    const user = await makeUser(server);
    const claimed = await server.client.post(`/app/${app.id}/claim`, { token: app.token }, { token: user.token });
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    expect(claimed.body).toMatchObject({ ok: true, id: app.id, manifestId: "claim-me", url: `${server.config.baseUrl}/@${user.handle}/claim-me` });
    expect(Date.parse(claimed.body.claimedAt)).toBe(server.clock.now());

    const old = await server.client.get(`/app/${app.id}/source`, { token: app.token });
    const error = expectError(old, 401, "unauthorized");
    expect(error.reason).toBe("token_revoked_post_claim");
    expect(error.recovery).toMatchObject({ kind: "pair", start: `${server.config.baseUrl}/api/pair/start`, verification_url: `${server.config.baseUrl}/pair` });
    expect((await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("claim-me")) }, { token: app.token })).body.error.reason).toBe(
      "token_revoked_post_claim",
    );

    // The new owner reads and writes; the app now lives at /@handle/manifestId.
    const source = await server.client.get(`/app/${app.id}/source`, { token: user.token });
    expect(source.status).toBe(200);
    const row = await server.ctx.apps.get(app.id);
    expect(row).toMatchObject({ ownerUserId: user.id, expiresAt: null, ownerHandle: user.handle });
    const put = await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("claim-me")) }, { token: user.token });
    expect(put.body).toMatchObject({ claimed: true, url: `${server.config.baseUrl}/@${user.handle}/claim-me`, revision: 2 });

    // Claiming again: 409 already_claimed, for anyone.
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: app.token }, { token: user.token }), 409, "already_claimed");
    const other = await makeUser(server);
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: app.token }, { token: other.token }), 409, "already_claimed");

    // An authenticated upsert of the same manifest id now overwrites the claimed app.
    const upsert = await server.client.post("/app", { module: moduleSource(manifestOf("claim-me")) }, { token: user.token });
    expect(upsert.status).toBe(200);
    expect(upsert.body.id).toBe(app.id);
  });

  it("GET /app/{id} of a claimed app redirects 302 to the canonical URL, which serves the page", async () => {
    const app = await createAnonymousApp(server, "page-app");
    const page = await server.client.get(`/app/${app.id}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.text).toContain("page-app");

    const user = await makeUser(server);
    await server.client.post(`/app/${app.id}/claim`, { token: app.token }, { cookie: user.cookie, headers: { origin: server.config.baseUrl } });
    const redirect = await server.client.get(`/app/${app.id}?t=abc`, { cookie: user.cookie });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toBe(`${server.config.baseUrl}/@${user.handle}/page-app?t=abc`);
    // Only for who may open it: the address names the owner and the manifest id. Anyone else is
    // refused as at an id with no app (the sign-in page for a browser).
    const stranger = await makeUser(server);
    for (const options of [{}, { cookie: stranger.cookie }]) expectError(await server.client.get(`/app/${app.id}`, options), 404, "app_not_found");
    const browser = await server.client.get(`/app/${app.id}`, { headers: { accept: "text/html" } });
    const missing = await server.client.get(`/app/00000000-0000-4000-8000-000000000000`, { headers: { accept: "text/html" } });
    expect([browser.status, browser.headers.get("location")]).toEqual([missing.status, null]);
    expect(browser.text).not.toContain(user.handle);
    const canonical = await server.client.get(`/@${user.handle}/page-app`, { cookie: user.cookie });
    expect(canonical.status).toBe(200);
    expect(canonical.text).toContain("<title>page-app</title>");
    expectError(await server.client.get(`/@${user.handle}/page-app`), 404, "app_not_found");
    expectError(await server.client.get(`/@${user.handle}/nothing-here`, { cookie: user.cookie }), 404, "app_not_found");
    expectError(await server.client.get(`/@nobody-at-all/page-app`), 404, "app_not_found");
    expectError(await server.client.get(`/app/not-a-uuid`), 400, "invalid_id");
    expectError(await server.client.get(`/app/00000000-0000-4000-8000-000000000000`), 404, "app_not_found");
  });

  it("the page escapes what the manifest says", async () => {
    const res = await server.client.post("/app", { module: moduleSource(manifestOf("xss", ["a"], { displayName: '<script>alert("x")</script>' })) });
    const page = await server.client.get(`/app/${res.body.id}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain("<script>alert");
    expect(page.text).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  });

  it("claim refusals: 401 without user auth, 403 for another app's token, 404, 400 for bad bodies", async () => {
    const app = await createAnonymousApp(server, "refuse");
    const other = await createAnonymousApp(server, "other-app");
    const user = await makeUser(server);
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: app.token }), 401, "sign_in_required");
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: app.token }, { token: app.token }), 401, "unauthorized");
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: other.token }, { token: user.token }), 403, "forbidden");
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: "svc_app_garbage" }, { token: user.token }), 403, "forbidden");
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: user.token }, { token: user.token }), 403, "forbidden");
    expectError(await server.client.post(`/app/${app.id}/claim`, {}, { token: user.token }), 400, "invalid_request");
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: app.token, extra: 1 }, { token: user.token }), 400, "invalid_request");
    expectError(await server.client.post(`/app/${app.id}/claim`, undefined, { token: user.token, raw: "not json" }), 400, "invalid_request");
    expectError(await server.client.post(`/app/00000000-0000-4000-8000-000000000000/claim`, { token: app.token }, { token: user.token }), 404, "app_not_found");
    expectError(await server.client.post(`/app/bad-id/claim`, { token: app.token }, { token: user.token }), 400, "invalid_id");
    // Cookie claims need Origin like every cookie mutation.
    expectError(await server.client.post(`/app/${app.id}/claim`, { token: app.token }, { cookie: user.cookie }), 403, "forbidden");
    // The app is still unclaimed and its token still works.
    expect((await server.client.get(`/app/${app.id}/source`, { token: app.token })).status).toBe(200);
  });

  it("claiming into a manifest id the user already holds is 409 manifest_id_conflict naming the holder", async () => {
    const user = await makeUser(server);
    const mine = await server.client.post("/app", { module: moduleSource(manifestOf("dupe")) }, { token: user.token });
    const anon = await createAnonymousApp(server, "dupe");
    const conflict = expectError(await server.client.post(`/app/${anon.id}/claim`, { token: anon.token }, { token: user.token }), 409, "manifest_id_conflict");
    expect(conflict.existingAppId).toBe(mine.body.id);
    expect(conflict.recovery).toMatchObject({ kind: "rename" });
    expect((await server.client.get(`/app/${anon.id}/source`, { token: anon.token })).status).toBe(200);
  });

  it("parallel claims of one app: exactly one wins", async () => {
    const app = await createAnonymousApp(server, "contested");
    const users = await Promise.all([makeUser(server), makeUser(server), makeUser(server)]);
    const results = await Promise.all(users.map((u) => server.client.post(`/app/${app.id}/claim`, { token: app.token }, { token: u.token })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expect([r.status, r.body.error.kind]).toEqual([409, "already_claimed"]);
  });

  it("GET /app lists the caller's apps newest first with role, revision, url and timestamps", async () => {
    const user = await makeUser(server);
    const clock = server.clock as ManualClock;
    const first = await server.client.post("/app", { module: moduleSource(manifestOf("first")) }, { token: user.token });
    clock.advance(MINUTE);
    const second = await server.client.post("/app", { module: moduleSource(manifestOf("second", ["a"], { displayName: "Second" })) }, { token: user.token });
    clock.advance(MINUTE);
    // An upsert bumps the revision but does not move the row.
    await server.client.post("/app", { module: moduleSource(manifestOf("first")) }, { token: user.token });

    const res = await server.client.get("/app", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.apps).toHaveLength(2);
    expect(res.body.apps[0]).toEqual({
      id: second.body.id,
      role: "owner",
      manifestId: "second",
      displayName: "Second",
      revision: 1,
      capabilities: { imports: [], exports: ["a"], origins: [] },
      url: `${server.config.baseUrl}/@${user.handle}/second`,
      createdAt: new Date(clock.now() - MINUTE).toISOString(),
      updatedAt: new Date(clock.now() - MINUTE).toISOString(),
    });
    expect(res.body.apps[1]).toMatchObject({ id: first.body.id, revision: 2, updatedAt: new Date(clock.now()).toISOString() });

    const bySession = await server.client.get("/app", { cookie: user.cookie });
    expect(bySession.body.apps).toHaveLength(2);
    // Nobody else's apps appear; an anonymous app appears for no one.
    const other = await makeUser(server);
    expect((await server.client.get("/app", { token: other.token })).body.apps).toEqual([]);
  });

  it("GET /app refusals: 401 without user auth or with an app token; limit and cursor validated", async () => {
    const app = await createAnonymousApp(server, "lister");
    const user = await makeUser(server);
    expectError(await server.client.get("/app"), 401, "sign_in_required");
    expectError(await server.client.get("/app", { token: app.token }), 401, "unauthorized");
    for (const limit of ["0", "101", "abc", "1.5", "-1"]) expectError(await server.client.get(`/app?limit=${limit}`, { token: user.token }), 400, "invalid_request");
    expectError(await server.client.get("/app?cursor=bogus", { token: user.token }), 400, "invalid_request");
    // Well-formed but not issued here: an id that is no uuid (a NUL in it made PostgreSQL answer 500).
    for (const id of ["a\u0000", "x"]) {
      const forged = Buffer.from(JSON.stringify([1, id]), "utf8").toString("base64url");
      expectError(await server.client.get(`/app?cursor=${forged}`, { token: user.token }), 400, "invalid_request");
    }
    expectError(await server.client.get("/app?sort=name", { token: user.token }), 400, "invalid_request");
    expect((await server.client.get("/app?limit=1", { token: user.token })).status).toBe(200);
    expect((await server.client.get("/app?limit=100", { token: user.token })).status).toBe(200);
  });

  it("walks 120 apps in pages of 50 with no duplicates or gaps (default limit 50)", async () => {
    const user = await makeUser(server);
    const clock = server.clock as ManualClock;
    const ids: string[] = [];
    // Several apps share each millisecond, so the id tie-break is exercised too.
    for (let i = 0; i < 120; i++) {
      if (i % 7 === 0) clock.advance(1);
      const res = await server.client.post("/app", { module: moduleSource(manifestOf(`page-${i}`)) }, { token: user.token });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? "" : `?cursor=${encodeURIComponent(cursor)}`;
      const page = await server.client.get(`/app${query}`, { token: user.token });
      expect(page.status).toBe(200);
      sizes.push(page.body.apps.length);
      seen.push(...page.body.apps.map((a: { id: string }) => a.id));
      cursor = page.body.nextCursor;
    } while (cursor !== null);
    expect(sizes).toEqual([50, 50, 20]);
    expect(new Set(seen).size).toBe(120);
    expect(new Set(seen)).toEqual(new Set(ids));
    // Newest first by creation, ties (same millisecond) in a stable id order.
    const rows = await server.ctx.db.selectFrom("apps").select(["id", "created_at"]).where("owner_user_id", "=", user.id).execute();
    const expected = rows
      .map((r) => ({ id: r.id, at: Number(r.created_at) }))
      .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);
    expect(seen).toEqual(expected);
    expect(seen.indexOf(ids.at(-1) ?? "")).toBeLessThan(7);

    // Explicit limits page the same way.
    const small = await server.client.get("/app?limit=100", { token: user.token });
    expect(small.body.apps).toHaveLength(100);
    const rest = await server.client.get(`/app?limit=100&cursor=${encodeURIComponent(small.body.nextCursor)}`, { token: user.token });
    expect(rest.body.apps).toHaveLength(20);
    expect(rest.body.nextCursor).toBeNull();
    expect([...small.body.apps, ...rest.body.apps].map((a: { id: string }) => a.id)).toEqual(seen);
  });
});
