import { afterAll, beforeAll, expect, it } from "vitest";
import { RENDER_TOKENS_KEPT } from "../../src/domain/app-page/render-tokens.ts";
import { createUser, type TestUser } from "../helpers/accounts.ts";
import { expectError } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { mostWaiting } from "../helpers/pg-locks.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { openFrame, openShell } from "../helpers/web.ts";

// A signed-in person gets render tokens of their own on every page and frame load (they rotate;
// anonymous visitors share theirs, visitor-tokens.test.ts). Page loads are not metered and sign-up
// is open, so one account reloading a page wrote a token row per load, kept for the token's life
// and a day: millions of rows a day from one client. Only a person's newest few per app are kept.
const APP = `export const manifest = { id: "reloaded", routes: { ping: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "pong" }); } };`;
const LOADS = RENDER_TOKENS_KEPT + 24;

describeEachDialect("hostile: a signed-in person reloading a page", (dialect) => {
  let server: TestServer;
  let person: TestUser;
  beforeAll(async () => {
    server = await startServer({ dialect });
    person = await createUser(server);
  });
  afterAll(async () => server.close());

  const newApp = async () => ((await server.client.post("/app", { module: APP })).body as { id: string }).id;
  const rowsOf = async (appId: string, userId: string, form: string) =>
    (await server.ctx.db.selectFrom("tokens").select("id").where("kind", "=", "render").where("app_id", "=", appId).where("user_id", "=", userId).where("name", "=", form).execute()).length;
  const ping = (appId: string, token: string) => server.client.post(`/app/${appId}/api/ping`, {}, { token });

  it("keeps their newest frame tokens only; the one just replaced still has its grace", async () => {
    const appId = await newApp();
    const query = await openShell(server, `/app/${appId}`, person.cookie);
    const frames: string[] = [];
    for (let i = 0; i < LOADS; i++) frames.push(await openFrame(server, appId, query));
    expect(await rowsOf(appId, person.id, "frame")).toBe(RENDER_TOKENS_KEPT);
    expect((await ping(appId, frames[LOADS - 1] ?? "")).body).toEqual({ ok: true, value: "pong" });
    expect((await ping(appId, frames[LOADS - 2] ?? "")).body).toEqual({ ok: true, value: "pong" });
    expectError(await ping(appId, frames[0] ?? ""), 401, "unauthorized");
  });

  it("concurrent page and frame loads all answer and leave exactly the newest", async () => {
    const appId = await newApp();
    // Page loads take no lane, so on PostgreSQL these transactions would run side by side over the
    // same rows, each trimming what its snapshot showed (leaving more than the newest) and, in the
    // order each plan visited the rows, deadlocking now and then. One person's renders of a form
    // take turns (RenderTokens.makingRoom).
    const loads = Promise.all(Array.from({ length: LOADS }, () => openShell(server, `/app/${appId}`, person.cookie)));
    // They queue in the process, not each on a pooled connection waiting for the lock: one person's
    // many page loads would otherwise hold every connection, and everyone else's requests wait.
    if (dialect === "postgres") expect(await mostWaiting(server.ctx.db, "advisory", loads)).toBe(0);
    const queries = await loads;
    expect(new Set(queries).size).toBe(LOADS);
    expect(await rowsOf(appId, person.id, "query")).toBe(RENDER_TOKENS_KEPT);
    const frames = await Promise.all(Array.from({ length: LOADS }, () => openFrame(server, appId, queries[LOADS - 1] ?? "")));
    expect(new Set(frames).size).toBe(LOADS);
    expect(await rowsOf(appId, person.id, "frame")).toBe(RENDER_TOKENS_KEPT);
  });

  it("keeps their newest page (query) tokens only, and the newest opens the frame", async () => {
    const appId = await newApp();
    const queries: string[] = [];
    for (let i = 0; i < LOADS; i++) queries.push(await openShell(server, `/app/${appId}`, person.cookie));
    expect(await rowsOf(appId, person.id, "query")).toBe(RENDER_TOKENS_KEPT);
    await openFrame(server, appId, queries[LOADS - 1] ?? "");
    expect((await server.client.get(`/app/${appId}/frame?t=${queries[0]}`)).status).toBe(401);
  });

  it("a refresh keeps their newest frame tokens only", async () => {
    const appId = await newApp();
    const query = await openShell(server, `/app/${appId}`, person.cookie);
    let token = "";
    for (let i = 0; i < LOADS; i++) token = await openFrame(server, appId, query);
    // Refreshes have their own limit (10 a minute); a few suffice to show they trim too.
    for (let i = 0; i < 5; i++) {
      const refreshed = await server.client.post(`/app/${appId}/render-token`, undefined, { token });
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
      token = refreshed.body.token as string;
      expect(await rowsOf(appId, person.id, "frame")).toBe(RENDER_TOKENS_KEPT);
    }
    expect((await ping(appId, token)).body).toEqual({ ok: true, value: "pong" });
  });

  it("trims nobody else's tokens, and none of theirs for other apps", async () => {
    const appId = await newApp();
    const other = await createUser(server);
    const othersToken = await openFrame(server, appId, await openShell(server, `/app/${appId}`, other.cookie));
    const elsewhere = await newApp();
    const theirsElsewhere = await openFrame(server, elsewhere, await openShell(server, `/app/${elsewhere}`, person.cookie));
    const query = await openShell(server, `/app/${appId}`, person.cookie);
    for (let i = 0; i < LOADS; i++) await openFrame(server, appId, query);
    expect(await rowsOf(appId, other.id, "frame")).toBe(1);
    expect((await ping(appId, othersToken)).body).toEqual({ ok: true, value: "pong" });
    expect((await ping(elsewhere, theirsElsewhere)).body).toEqual({ ok: true, value: "pong" });
  });
});
