import { afterAll, beforeAll, expect, it } from "vitest";
import { EventReader } from "./helpers/sse.ts";
import { expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const KV_APP = `export const manifest = {
  id: "live-app",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { put: { access: "write", input: { type: "object", properties: { keys: { type: "array", items: { type: "string" } } } } } },
};
export default {
  async fetch(request, env) {
    const body = await request.json();
    for (const key of body.keys) await env.KV.set(key, 1);
    return Response.json({ ok: true, value: null });
  },
};
`;

/** Reads server-sent events from a stream until `until` says stop (bounded by the caller's abort). */
async function readEvents(res: Response, until: (events: { event: string; data: unknown }[]) => boolean): Promise<{ event: string; data: unknown }[]> {
  const reader = new EventReader(res);
  const events = await reader.until(until);
  await reader.close();
  return events.map(({ event, data }) => ({ event, data }));
}

describeEachDialect("app settings and live events", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  it("PUT /app/{id}/starter-prompt: owner's user token; 2000 characters; null or empty clears; the shell uses it", async () => {
    const owner = await makeUser(server);
    const { id } = (await server.client.post("/app", { module: moduleSource(manifestOf("prompted")) }, { token: owner.token })).body;
    const set = await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: "Help me improve this app." }, { token: owner.token });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ starter_prompt: "Help me improve this app." });
    const shell = await server.client.get(`/@${owner.handle}/prompted`, { cookie: owner.cookie, headers: { accept: "text/html" } });
    expect(shell.text).toContain(encodeURIComponent("Help me improve this app.\n\nApp: prompted"));
    // Idempotent.
    expect((await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: "Help me improve this app." }, { token: owner.token })).status).toBe(200);
    expect((await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: "é".repeat(2000) }, { token: owner.token })).status).toBe(200);
    expectError(await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: "x".repeat(2001) }, { token: owner.token }), 400, "invalid_input");
    expect((await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: "" }, { token: owner.token })).body).toEqual({ starter_prompt: null });
    expect((await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: null }, { token: owner.token })).body).toEqual({ starter_prompt: null });

    expectError(await server.client.put(`/app/${id}/starter-prompt`, {}, { token: owner.token }), 400, "invalid_request");
    expectError(await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: 5 }, { token: owner.token }), 400, "invalid_request");
    expectError(await server.client.put(`/app/${id}/starter-prompt`, undefined, { token: owner.token, raw: "{bad" }), 400, "invalid_request");
    expectError(await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: "x" }), 401, "sign_in_required");
    const stranger = await makeUser(server);
    expectError(await server.client.put(`/app/${id}/starter-prompt`, { starter_prompt: "x" }, { token: stranger.token }), 403, "forbidden");
    const anon = (await server.client.post("/app", { module: moduleSource(manifestOf("anon")) })).body;
    expectError(await server.client.put(`/app/${anon.id}/starter-prompt`, { starter_prompt: "x" }, { token: anon.token }), 401, "unauthorized");
    expectError(await server.client.put(`/app/${anon.id}/starter-prompt`, { starter_prompt: "x" }, { token: owner.token }), 403, "forbidden");
  });

  it("visibility: private hides the page, signed-in opens it to any signed-in user, public to everyone", async () => {
    const owner = await makeUser(server);
    const viewer = await makeUser(server);
    await server.client.post("/app", { module: moduleSource(manifestOf("seen")) }, { token: owner.token });
    const path = `/@${owner.handle}/seen`;
    const { id } = (await server.client.get("/app", { token: owner.token })).body.apps[0];
    const html = { accept: "text/html" };

    expect((await server.client.get(path, { cookie: owner.cookie, headers: html })).status).toBe(200);
    expect((await server.client.get(path, { cookie: viewer.cookie, headers: html })).status).toBe(404);
    const signIn = await server.client.get(path, { headers: html });
    expect(signIn.status).toBe(401);
    expect(signIn.text).toContain("Sign in");
    // The same answers where nothing exists: refusals do not reveal the app.
    const nothing = await server.client.get(`/@${owner.handle}/nothing`, { headers: html });
    expect(nothing.status).toBe(401);
    // The path shows up as itself (return_to) and URL-encoded (the sign-up link's return_to).
    expect(nothing.text.replaceAll("/nothing", "/seen").replaceAll("%2Fnothing", "%2Fseen")).toBe(signIn.text);
    expect((await server.client.get(`/@${owner.handle}/nothing`, { cookie: viewer.cookie, headers: html })).status).toBe(404);

    expectError(await server.client.put(`/app/${id}/visibility`, { visibility: "everyone" }, { token: owner.token }), 400, "invalid_request");
    expectError(await server.client.put(`/app/${id}/visibility`, { visibility: "public" }, { token: viewer.token }), 403, "forbidden");
    expect((await server.client.put(`/app/${id}/visibility`, { visibility: "signed-in" }, { token: owner.token })).body).toEqual({ ok: true, visibility: "signed-in" });
    expect((await server.client.get(path, { cookie: viewer.cookie, headers: html })).status).toBe(200);
    expect((await server.client.get(path, { headers: html })).status).toBe(401);
    // The signed-in viewer's page token calls ops as an end-user.
    const render = await openFrame(server, id, await openShell(server, path, viewer.cookie));
    expect((await server.client.post(`/app/${id}/api/hello`, {}, { token: render })).status).toBe(200);

    expect((await server.client.put(`/app/${id}/visibility`, { visibility: "public" }, { token: owner.token })).status).toBe(200);
    expect((await server.client.get(path, { headers: html })).status).toBe(200);
  });

  it("GET /app/{id}/events streams hello, coalesced data keys and revision", { timeout: 20_000 }, async () => {
    const created = (await server.client.post("/app", { module: KV_APP })).body;
    const render = await openFrame(server, created.id, await openShell(server, `/app/${created.id}`));
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 10_000);
    try {
      const res = await fetch(`${server.url}/app/${created.id}/events?t=${render}`, { signal: abort.signal });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/event-stream");
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      const reading = readEvents(res, (events) => events.some((e) => e.event === "revision"));
      await new Promise((r) => setTimeout(r, 100));
      // Two calls inside one 250 ms window: one data event with every key.
      await Promise.all([
        server.client.post(`/app/${created.id}/api/put`, { keys: ["b", "a"] }, { token: render }),
        server.client.post(`/app/${created.id}/api/put`, { keys: ["c"] }, { token: render }),
      ]);
      await new Promise((r) => setTimeout(r, 400));
      const updated = await server.client.put(`/app/${created.id}`, { module: KV_APP }, { token: created.token });
      expect(updated.status).toBe(200);
      const events = await reading;
      expect(events).toEqual([
        { event: "hello", data: { revision: 1 } },
        { event: "data", data: { keys: ["a", "b", "c"] } },
        { event: "revision", data: { revision: 2 } },
      ]);
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  });

  it("a cookie-session stream ends with sse_cookie_expired once the session lapses", { timeout: 20_000 }, async () => {
    const owner = await makeUser(server);
    const { id } = (await server.client.post("/app", { module: KV_APP }, { token: owner.token })).body;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 10_000);
    try {
      const res = await fetch(`${server.url}/app/${id}/events`, { headers: { cookie: owner.cookie }, signal: abort.signal });
      expect(res.status).toBe(200);
      const reading = readEvents(res, (events) => events.some((e) => e.event === "error"));
      await new Promise((r) => setTimeout(r, 100));
      await server.ctx.sessions.end(owner.cookie.slice("svc_session=".length));
      expect((await server.client.post(`/app/${id}/api/put`, { keys: ["x"] }, { token: owner.token })).status).toBe(200);
      const events = await reading;
      expect(events[0]).toEqual({ event: "hello", data: { revision: 1 } });
      expect(events[events.length - 1]).toMatchObject({ event: "error", data: { ok: false, error: { kind: "sse_cookie_expired" } } });
      expect(events.some((e) => e.event === "data")).toBe(false);
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  });

  it("events refuse a lapsed cookie session with sse_cookie_expired, and strangers with 403", async () => {
    const owner = await makeUser(server);
    const { id } = (await server.client.post("/app", { module: moduleSource(manifestOf("private-live")) }, { token: owner.token })).body;
    expectError(await server.client.get(`/app/${id}/events`, { cookie: "svc_session=stale-or-ended" }), 401, "sse_cookie_expired");
    expectError(await server.client.get(`/app/${id}/events`), 403, "forbidden");
    const stranger = await makeUser(server);
    expectError(await server.client.get(`/app/${id}/events`, { token: stranger.token }), 403, "forbidden");
  });
});
