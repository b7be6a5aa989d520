import { afterAll, beforeAll, expect, it } from "vitest";
import { DAY, MINUTE, type ManualClock } from "../../src/config/clock.ts";
import { VISITOR_TOKEN_WINDOW_MS } from "../../src/domain/app-page/visitor-tokens.ts";
import { createUser } from "../helpers/accounts.ts";
import { expectError } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { openFrame, openShell } from "../helpers/web.ts";

// App pages are public and unmetered (spec: app reads are not metered). Each anonymous page view
// minted a query render token and each frame load a 7-day one: two rows, each with a durable
// commit, for every GET anyone sent, kept for days. A flooder of one page could fill the disk and
// put an fsync per view on Node's thread. Anonymous visitors of an app now share its tokens.
const APP = `export const manifest = { id: "visited", routes: { ping: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "pong" }); } };`;

describeEachDialect("hostile: page views by anonymous visitors", (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    clock = server.clock as ManualClock;
  });
  afterAll(async () => server.close());

  const renderRows = async (appId: string) => {
    const rows = await server.ctx.db.selectFrom("tokens").select(["name", "user_id"]).where("kind", "=", "render").where("app_id", "=", appId).execute();
    return { query: rows.filter((row) => row.name === "query").length, frame: rows.filter((row) => row.name === "frame").length, rows };
  };

  it("a flood of page and frame loads writes one token row of each form per app and window", async () => {
    const { id } = (await server.client.post("/app", { module: APP })).body as { id: string };
    // Concurrent renders share the mint under way, and later ones the row it wrote.
    const queries = await Promise.all(Array.from({ length: 20 }, () => openShell(server, `/app/${id}`)));
    for (let i = 0; i < 20; i++) queries.push(await openShell(server, `/app/${id}`));
    const frames = await Promise.all(queries.map((query) => openFrame(server, id, query)));
    expect(new Set(queries).size).toBe(1);
    expect(new Set(frames).size).toBe(1);
    expect(await renderRows(id)).toMatchObject({ query: 1, frame: 1 });

    // The next window's visitors get new tokens; the old ones live on to their own expiry.
    clock.advance(VISITOR_TOKEN_WINDOW_MS);
    const nextQuery = await openShell(server, `/app/${id}`);
    const nextFrame = await openFrame(server, id, nextQuery);
    expect(nextQuery).not.toBe(queries[0]);
    expect(nextFrame).not.toBe(frames[0]);
    expect(await renderRows(id)).toMatchObject({ query: 2, frame: 2 });
    for (const token of [frames[0], nextFrame]) expect((await server.client.post(`/app/${id}/api/ping`, {}, { token })).body).toEqual({ ok: true, value: "pong" });
  });

  it("each app has its own shared tokens, and each is bound to its app", async () => {
    const first = (await server.client.post("/app", { module: APP })).body as { id: string };
    const second = (await server.client.post("/app", { module: APP })).body as { id: string };
    const firstToken = await openFrame(server, first.id, await openShell(server, `/app/${first.id}`));
    const secondToken = await openFrame(server, second.id, await openShell(server, `/app/${second.id}`));
    expect(firstToken).not.toBe(secondToken);
    expectError(await server.client.post(`/app/${second.id}/api/ping`, {}, { token: firstToken }), 403, "forbidden");
  });

  it("one visitor's refresh does not cut short the token every other visitor's page holds", async () => {
    const { id } = (await server.client.post("/app", { module: APP })).body as { id: string };
    const shared = await openFrame(server, id, await openShell(server, `/app/${id}`));
    const refreshed = await server.client.post(`/app/${id}/render-token`, undefined, { token: shared });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.token).toMatch(/^svc_render_/);
    expect(Date.parse(refreshed.body.expiresAt) - clock.now()).toBeGreaterThan(7 * DAY - VISITOR_TOKEN_WINDOW_MS);
    // Past the 15 minutes a person's presented token keeps: a visitor's shared one still works.
    clock.advance(16 * MINUTE);
    expect((await server.client.post(`/app/${id}/api/ping`, {}, { token: shared })).body).toEqual({ ok: true, value: "pong" });
    // Refreshes write no rows of their own beyond the window's shared token.
    for (let i = 0; i < 5; i++) expect((await server.client.post(`/app/${id}/render-token`, undefined, { token: shared })).status).toBe(200);
    expect((await renderRows(id)).frame).toBeLessThanOrEqual(2);
  });

  it("a signed-in person's renders still mint tokens of their own, not the visitors'", async () => {
    const { id } = (await server.client.post("/app", { module: APP })).body as { id: string };
    const visitors = await openFrame(server, id, await openShell(server, `/app/${id}`));
    const person = await createUser(server);
    const mine = await openFrame(server, id, await openShell(server, `/app/${id}`, person.cookie));
    const again = await openFrame(server, id, await openShell(server, `/app/${id}`, person.cookie));
    expect(new Set([visitors, mine, again]).size).toBe(3);
    const { rows } = await renderRows(id);
    expect(rows.filter((row) => row.user_id === person.id)).toHaveLength(4);
    expect(rows.filter((row) => row.user_id === null)).toHaveLength(2);
  });
});
