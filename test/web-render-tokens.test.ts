import { afterAll, beforeAll, expect, it } from "vitest";
import { MINUTE, HOUR, type ManualClock } from "../src/config/clock.ts";
import { expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const MODULE = moduleSource(manifestOf("tokens-app", ["hello"]));

describeEachDialect("render tokens", (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    clock = server.clock as ManualClock;
  });
  afterAll(async () => server.close());

  it("a link carrying another person's token opens the page as whoever is signed in, never as that person", async () => {
    const [owner, attacker, victim] = [await makeUser(server), await makeUser(server), await makeUser(server)];
    const { id } = (await server.client.post("/app", { module: MODULE }, { token: owner.token })).body;
    expect((await server.client.put(`/app/${id}/visibility`, { visibility: "public" }, { token: owner.token })).status).toBe(200);
    const shell = `/@${owner.handle}/tokens-app`;
    const attackers = await openShell(server, shell, attacker.cookie);
    // The victim, signed in, follows a link with the attacker's token in it.
    const victims = await openShell(server, `${shell}?t=${attackers}`, victim.cookie);
    expect(victims).not.toBe(attackers);
    const sdk = await server.ctx.tokens.authenticate(await openFrame(server, id, victims));
    expect(sdk.kind === "render" ? sdk.userId : null).toBe(victim.id);
    // Signed out, the link still opens the page as the person it was made for.
    expect(await openShell(server, `${shell}?t=${attackers}`)).toBe(attackers);
  });

  it("claiming an app ends the render tokens made while it was unclaimed: the one in its open-in-chat link would have opened it as the owner", async () => {
    const person = await makeUser(server);
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("claimed-later", ["hello"])) });
    const { id, token } = created.body;
    const shell = await server.client.get(`/app/${id}`, { cookie: person.cookie, headers: { accept: "text/html" } });
    const chat = decodeURIComponent(/id="open-chat" href="https:\/\/claude\.ai\/new\?q=([^"]+)"/.exec(shell.text)?.[1]?.replaceAll("&amp;", "&") ?? "");
    const inPrompt = /(svc_render_[A-Za-z0-9]+)/.exec(chat)?.[1] ?? "";
    expect(inPrompt).not.toBe("");
    const frame = await openFrame(server, id, inPrompt);
    expect((await server.client.post(`/app/${id}/api/hello`, {}, { token: frame })).status).toBe(200);

    expect((await server.client.post(`/app/${id}/claim`, { token }, { token: person.token })).status).toBe(200);
    expect((await server.client.get(`/@${person.handle}/claimed-later?t=${inPrompt}`, { headers: { accept: "text/html" } })).status).toBe(401);
    for (const refused of [await server.client.post(`/app/${id}/api/hello`, {}, { token: frame }), await server.client.post(`/app/${id}/render-token`, undefined, { token: frame })]) {
      expect(expectError(refused, 401, "unauthorized")).toMatchObject({ reason: "token_revoked_post_claim", message: expect.stringContaining("open it again") });
    }
    // The owner's own page mints them fresh ones.
    const fresh = await openFrame(server, id, await openShell(server, `/@${person.handle}/claimed-later`, person.cookie));
    expect((await server.client.post(`/app/${id}/api/hello`, {}, { token: fresh })).status).toBe(200);
  });

  it("rotate on re-render: the previous token keeps working for 15 minutes, then token_expired", async () => {
    const owner = await makeUser(server);
    const created = await server.client.post("/app", { module: MODULE }, { token: owner.token });
    const { id } = created.body;
    const shell = `/@${owner.handle}/tokens-app`;
    const first = await openFrame(server, id, await openShell(server, shell, owner.cookie));
    expect((await server.client.post(`/app/${id}/api/hello`, {}, { token: first })).status).toBe(200);

    const second = await openFrame(server, id, await openShell(server, shell, owner.cookie));
    clock.advance(14 * MINUTE);
    expect((await server.client.post(`/app/${id}/api/hello`, {}, { token: first })).status).toBe(200);
    clock.advance(2 * MINUTE);
    expectError(await server.client.post(`/app/${id}/api/hello`, {}, { token: first }), 401, "token_expired");
    const who = await server.client.post(`/app/${id}/api/hello`, {}, { token: second });
    expect(who.status).toBe(200);

    // Refresh swaps the presented token for a 7-day one; the old one gets the same 15 minutes.
    const refreshed = await server.client.post(`/app/${id}/render-token`, undefined, { token: second });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.token).toMatch(/^svc_render_/);
    expect(Date.parse(refreshed.body.expiresAt) - clock.now()).toBe(7 * 24 * HOUR);
    clock.advance(16 * MINUTE);
    expectError(await server.client.post(`/app/${id}/api/hello`, {}, { token: second }), 401, "token_expired");
    expect((await server.client.post(`/app/${id}/api/hello`, {}, { token: refreshed.body.token })).status).toBe(200);

    // A day after expiry the hourly sweep drops the rows; the tokens are then simply unknown.
    clock.advance(24 * HOUR);
    expect(await server.ctx.renderTokens.sweep()).toBeGreaterThanOrEqual(2);
    const unknown = expectError(await server.client.post(`/app/${id}/api/hello`, {}, { token: first }), 401, "unauthorized");
    expect(unknown.reason).toBe("token_unknown");
    expect((await server.client.post(`/app/${id}/api/hello`, {}, { token: refreshed.body.token })).status).toBe(200);
  });

  it("query render tokens last about 24 hours and open a private app's page for whoever holds them", async () => {
    const owner = await makeUser(server);
    await server.client.post("/app", { module: MODULE }, { token: owner.token });
    const shell = `/@${owner.handle}/tokens-app`;
    const t = await openShell(server, shell, owner.cookie);
    // No cookie, only the link: allowed while the token lives.
    expect((await server.client.get(`${shell}?t=${t}`, { headers: { accept: "text/html" } })).status).toBe(200);
    const stranger = await makeUser(server);
    expectError(await server.client.get(shell, { cookie: stranger.cookie }), 404, "app_not_found");
    clock.advance(24 * HOUR + MINUTE);
    const expired = await server.client.get(`${shell}?t=${t}`, { headers: { accept: "text/html" } });
    expect(expired.status).toBe(401);
    expect(expired.text).toContain("This link has expired");
  });

  it("a query render token opens the page only while the person it was made for may: not after their share is revoked", async () => {
    const owner = await makeUser(server);
    const viewer = await makeUser(server);
    const appId = (await server.client.post("/app", { module: moduleSource(manifestOf("revoked-page")) }, { token: owner.token })).body.id as string;
    expect((await server.client.put(`/app/${appId}/starter-prompt`, { starter_prompt: "Internal: the buyer is ACME" }, { token: owner.token })).status).toBe(200);
    const invited = await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: viewer.handle, role: "viewer" }, { token: owner.token });
    expect((await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: viewer.token })).status).toBe(200);
    const shell = `/@${owner.handle}/revoked-page`;
    const t = await openShell(server, shell, viewer.cookie);
    expect((await server.client.get(`${shell}?t=${t}`, { headers: { accept: "text/html" } })).status).toBe(200);
    expect((await server.client.post(`/api/v1/apps/${appId}/shares/${invited.body.shareId}/revoke`, undefined, { token: owner.token })).status).toBe(200);
    // As the frame refuses that token now, the page does: the sign-in page, saying nothing of the app.
    const page = await server.client.get(`${shell}?t=${t}`, { headers: { accept: "text/html" } });
    expect({ status: page.status, leaksPrompt: page.text.includes("the buyer is ACME") || page.text.includes(encodeURIComponent("the buyer is ACME")) }).toEqual({ status: 401, leaksPrompt: false });
    expect((await server.client.get(`/app/${appId}/frame?t=${t}`)).status).toBe(403);
  });

  it("refresh needs a render token of this app and is limited to 10 per app and client IP (app_busy)", async () => {
    const created = await server.client.post("/app", { module: MODULE });
    const other = await server.client.post("/app", { module: MODULE });
    const { id } = created.body;
    const token = await openFrame(server, id, await openShell(server, `/app/${id}`));
    const otherToken = await openFrame(server, other.body.id, await openShell(server, `/app/${other.body.id}`));

    expectError(await server.client.post(`/app/${id}/render-token`), 401, "unauthorized");
    expectError(await server.client.post(`/app/${id}/render-token`, undefined, { token: created.body.token }), 403, "forbidden");
    expectError(await server.client.post(`/app/${id}/render-token`, undefined, { token: otherToken }), 403, "forbidden");
    // Refusals do not count (issue 14): were they taken first, anyone could use up a holder's refreshes.
    let last = token;
    for (let i = 0; i < 10; i++) {
      const res = await server.client.post(`/app/${id}/render-token`, undefined, { token: last });
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-limit")).toBe("10");
      expect(res.headers.get("ratelimit-remaining")).toBe(String(9 - i));
      last = res.body.token;
    }
    const refused = await server.client.post(`/app/${id}/render-token`, undefined, { token: last });
    const error = expectError(refused, 429, "app_busy");
    expect(error).toMatchObject({ limit: "render_token_refresh", allowed: 10, observed: 11, rung: "throttled" });
    expect(refused.headers.get("retry-after")).toBe(refused.headers.get("ratelimit-reset"));
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another app's refreshes are counted apart.
    expect((await server.client.post(`/app/${other.body.id}/render-token`, undefined, { token: otherToken })).status).toBe(200);
  });

  it("answers CORS for the frame's opaque origin with * and never with credentials", async () => {
    const created = await server.client.post("/app", { module: MODULE });
    const preflight = await server.client.request("OPTIONS", `/app/${created.body.id}/api/hello`, undefined, {
      headers: { origin: "null", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("authorization, content-type, x-svc-visitor");
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
    const call = await server.client.post(`/app/${created.body.id}/api/hello`, {}, { token: created.body.token, headers: { origin: "null" } });
    expect(call.headers.get("access-control-allow-origin")).toBe("*");
    // The control plane is not for the frame: no CORS there.
    const me = await server.client.request("OPTIONS", "/api/me", undefined, { headers: { origin: "null", "access-control-request-method": "GET" } });
    expect(me.headers.get("access-control-allow-origin")).toBeNull();
  });
});
