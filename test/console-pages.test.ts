import { afterAll, beforeAll, expect, it } from "vitest";
import { makeUser, manifestOf, moduleSource, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const page = (server: TestServer, path: string, cookie: string) => fetch(`${server.url}${path}`, { headers: { cookie, accept: "text/html" } }).then(async (res) => ({ status: res.status, text: await res.text() }));

/** The dashboard's pages and search over the store (both dialects), as plain HTTP. */
describeEachDialect("console: dashboard pages and search", (dialect) => {
  let server: TestServer;
  let user: FixtureUser;
  beforeAll(async () => {
    server = await startServer({ dialect });
    user = await makeUser(server);
    // 27 apps: one page of 25 and a second of 2, newest first.
    for (let i = 0; i < 27; i++) {
      const id = `app-${String(i).padStart(2, "0")}`;
      await server.client.post("/app", { module: moduleSource(manifestOf(id, ["x"], { displayName: i === 5 ? "Gr%_cery list" : `App ${i}` })) }, { token: user.token });
    }
  });
  afterAll(async () => server.close());

  it("lists 25 apps a page, newest first, with a link to the older ones that holds the rest", async () => {
    const first = await page(server, "/", user.cookie);
    expect(first.status).toBe(200);
    const names = (text: string) => [...text.matchAll(/<a href="\/apps\/[0-9a-f-]+">([^<]+)<\/a>/g)].map((m) => m[1]);
    expect(names(first.text)).toHaveLength(25);
    expect(names(first.text)[0]).toBe("App 26");
    const older = /<a href="(\/\?cursor=[^"]+)">Older apps<\/a>/.exec(first.text)?.[1];
    expect(older).toBeDefined();
    const second = await page(server, (older ?? "").replace(/&amp;/g, "&"), user.cookie);
    expect(names(second.text)).toEqual(["App 1", "App 0"]);
    expect(second.text).not.toContain("Older apps");
  });

  it("searches names and manifest ids, with LIKE's wildcards taken literally", async () => {
    const byName = await page(server, `/?q=${encodeURIComponent("gr%_c")}`, user.cookie);
    expect(byName.text).toContain("Gr%_cery list");
    expect(byName.text).not.toContain("App 26");
    // `%` alone matches only names holding a `%`, not everything.
    const percent = await page(server, `/?q=${encodeURIComponent("%")}`, user.cookie);
    expect(percent.text.match(/<a href="\/apps\//g)).toHaveLength(1);
    const byId = await page(server, "/?q=app-1", user.cookie);
    // app-10 … app-19 (ids are zero-padded: app-01 does not match).
    expect(byId.text.match(/<a href="\/apps\//g)).toHaveLength(10);
    const none = await page(server, "/?q=zzz", user.cookie);
    expect(none.text).toContain("No app matches “zzz”.");
  });

  it("the diagnostics chart counts calls and failures per hour, written to the store in batches", async () => {
    const module = `export const manifest = { id: "faulty", routes: { boom: { access: "read" }, fine: { access: "read" } } };
export default { async fetch(request) {
  if (request.headers.get("x-svc-op") === "fine") return Response.json({ ok: true, value: 1 });
  throw new Error("faulty on purpose");
} };`;
    const app = await server.client.post("/app", { module }, { token: user.token });
    for (let i = 0; i < 3; i++) expect((await server.client.post(`/app/${app.body.id}/api/boom`, {}, { token: user.token })).status).toBe(500);
    for (let i = 0; i < 2; i++) expect((await server.client.post(`/app/${app.body.id}/api/fine`, {}, { token: user.token })).status).toBe(200);
    // Refused before it ran (an op the app does not declare): not a call.
    expect((await server.client.post(`/app/${app.body.id}/api/nope`, {}, { token: user.token })).status).toBe(404);
    const counted = () => server.ctx.store.db.selectFrom("op_call_counts").select(["calls", "failures"]).where("app_id", "=", app.body.id).execute();
    // Counted in memory first: the page already shows them, the store has no row yet.
    expect(await counted()).toEqual([]);
    const diagnostics = await page(server, `/apps/${app.body.id}/diagnostics`, user.cookie);
    expect(diagnostics.status).toBe(200);
    expect(diagnostics.text).toMatch(/<figcaption>5 calls, 3 failed, in the last 7 days; the most, 5, in the hour from \d{4}-\d\d-\d\dT\d\d:00 UTC\./);
    expect(diagnostics.text.match(/<rect [^>]*fill="#5b6b7a"/g)).toHaveLength(1);
    expect(diagnostics.text.match(/<rect [^>]*fill="#b4461f"/g)).toHaveLength(1);
    await server.ctx.callCounts.flush();
    expect((await counted()).map((r) => [Number(r.calls), Number(r.failures)])).toEqual([[5, 3]]);
    // The dashboard says when each app was last called (to the hour), or that it was not.
    expect((await page(server, "/?q=faulty", user.cookie)).text).toMatch(/revision 1 · created \d{4}-\d\d-\d\d · last call \d{4}-\d\d-\d\d \d\d:00 UTC/);
    expect((await page(server, "/?q=app-26", user.cookie)).text).toContain("no calls this week");
    // After the flush the page reads the same from the store alone.
    expect((await page(server, `/apps/${app.body.id}/diagnostics`, user.cookie)).text).toContain("5 calls, 3 failed");
  });

  it("the diagnostics tab's live stream: the app's new diag entries, to those who may read them, until the session ends", async () => {
    const module = `export const manifest = { id: "live-diag", routes: { boom: { access: "read" } } };
export default { async fetch() { throw new Error("live and failing"); } };`;
    const app = await server.client.post("/app", { module }, { token: user.token });
    const stranger = await makeUser(server);
    const refused = await fetch(`${server.url}/apps/${app.body.id}/diagnostics/live`, { headers: { cookie: stranger.cookie } });
    expect(refused.status).toBe(404);
    expect(refused.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await refused.text()).toContain("no such app among yours");

    // A session of its own, so ending it leaves the other tests' session alone.
    const session = await server.ctx.sessions.create(user.id);
    const res = await fetch(`${server.url}/apps/${app.body.id}/diagnostics/live`, { headers: { cookie: `svc_session=${session}` } });
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const reader = (res.body ?? new ReadableStream<Uint8Array>()).getReader();
    let seen = "";
    const until = async (text: string) => {
      while (!seen.includes(text)) {
        const chunk = await reader.read();
        if (chunk.done) throw new Error(`the stream ended before ${text}: ${seen}`);
        seen += new TextDecoder().decode(chunk.value);
      }
    };
    await until("event: hello");
    expect((await server.client.post(`/app/${app.body.id}/api/boom`, {}, { token: user.token })).status).toBe(500);
    await until("live and failing");
    expect(seen).toMatch(/event: diag\ndata: \{"ts":"[^"]+","message":"Error: live and failing","source":"app.js","line":2/);
    // Signed out: the next event ends the stream with sse_cookie_expired.
    await server.ctx.sessions.end(session);
    expect((await server.client.post(`/app/${app.body.id}/api/boom`, {}, { token: user.token })).status).toBe(500);
    await until("sse_cookie_expired");
    expect((await reader.read()).done).toBe(true);
  });
});
