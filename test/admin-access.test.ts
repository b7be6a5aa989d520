import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import type { ApiResponse } from "./helpers/client.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const MODULE = `export const manifest = { id: "plain", routes: { hi: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "hi" }); } };`;

/** Issue 45: /admin does not exist for anyone but an operator, whatever they hold. */
describe("admin access", () => {
  let server: TestServer;
  let operator: FixtureUser;
  let member: FixtureUser;
  let teamAdmin: FixtureUser;
  let app: { id: string; token: string };
  let render: string;

  beforeAll(async () => {
    server = await startServer();
    operator = await makeUser(server);
    await server.ctx.users.setRole(operator.handle, "operator");
    member = await makeUser(server);
    teamAdmin = await makeUser(server, "pro");
    await server.ctx.teams.create(teamAdmin.id, { slug: `t${teamAdmin.handle}` });
    const created = await server.client.post("/app", { module: MODULE });
    app = { id: created.body.id, token: created.body.token };
    render = (await server.ctx.renderTokens.mintQuery(app.id, null)).token;
  });
  afterAll(async () => server.close());

  const PAGES = ["/admin", "/admin/reports", "/admin/apps", "/admin/apps?q=anonymous", () => `/admin/apps/${app.id}`, "/admin/users", "/admin/audit"];
  const API: [string, string | (() => string), unknown?][] = [
    ["GET", "/api/v1/admin/users"],
    ["POST", () => `/api/v1/admin/users/${member.handle}/suspend`, { reason: "x" }],
    ["POST", () => `/api/v1/admin/users/${member.handle}/unsuspend`],
    ["GET", "/api/v1/admin/apps"],
    ["POST", () => `/api/v1/admin/apps/${app.id}/suspend`, { reason: "x" }],
    ["POST", () => `/api/v1/admin/apps/${app.id}/unsuspend`],
    ["DELETE", () => `/api/v1/admin/apps/${app.id}`],
    ["GET", "/api/v1/admin/reports"],
    ["GET", "/api/v1/admin/audit"],
  ];
  const FORMS = [() => `/admin/apps/${app.id}/suspend`, () => `/admin/apps/${app.id}/unsuspend`, () => `/admin/apps/${app.id}/delete`, () => `/admin/users/${member.handle}/suspend`, () => `/admin/users/${member.handle}/unsuspend`];
  const path = (p: string | (() => string)) => (typeof p === "string" ? p : p());

  const callers: [string, () => { token?: string; cookie?: string }][] = [
    ["a member's token", () => ({ token: member.token })],
    ["a member's session", () => ({ cookie: member.cookie })],
    ["a team admin", () => ({ token: teamAdmin.token })],
    ["an app token", () => ({ token: app.token })],
    ["a render token", () => ({ token: render })],
    ["no credential", () => ({})],
  ];

  for (const [who, credentials] of callers) {
    it(`${who}: every admin page and admin API route is 404 not_found`, async () => {
      for (const p of PAGES) {
        const res = await server.client.get(path(p), { ...credentials(), headers: { accept: "text/html" } });
        expect(res.status, path(p)).toBe(404);
        expect(res.text, path(p)).not.toContain("Admin sections");
      }
      for (const [method, p, body] of API) {
        const res: ApiResponse = await server.client.request(method, path(p), body, credentials());
        expectError(res, 404, "not_found");
      }
      for (const p of FORMS) {
        const res = await server.client.request("POST", path(p), undefined, { ...credentials(), raw: "reason=x&confirm=x", headers: { "content-type": "application/x-www-form-urlencoded", origin: new URL(server.config.baseUrl).origin, accept: "application/json" } });
        expectError(res, 404, "not_found");
      }
    });
  }

  it("the operator's session: every page opens; a form from a foreign Origin is refused 403, from ours it acts", async () => {
    for (const p of PAGES) {
      const res = await server.client.get(path(p), { cookie: operator.cookie, headers: { accept: "text/html" } });
      expect(res.status === 200 || res.status === 303, `${path(p)}: ${res.status}`).toBe(true);
    }
    const form = (p: string, origin: string) =>
      server.client.request("POST", p, undefined, { cookie: operator.cookie, raw: "reason=test", headers: { "content-type": "application/x-www-form-urlencoded", origin, accept: "application/json" } });
    for (const p of FORMS) expectError(await form(path(p), "https://evil.example"), 403, "forbidden");
    // None of those acted: the app still runs.
    expect((await server.client.post(`/app/${app.id}/api/hi`, {}, { token: app.token })).status).toBe(200);
    const ours = await form(`/admin/apps/${app.id}/suspend`, new URL(server.config.baseUrl).origin);
    expect(ours.status).toBe(303);
    expectError(await server.client.post(`/app/${app.id}/api/hi`, {}, { token: app.token }), 403, "forbidden");
    // The API refuses a session's write from a foreign Origin too (the JSON API's own rule): still 404, nothing done.
    const foreign = await server.client.post(`/api/v1/admin/apps/${app.id}/unsuspend`, {}, { cookie: operator.cookie, headers: { origin: "https://evil.example" } });
    expectError(foreign, 404, "not_found");
    expectError(await server.client.post(`/app/${app.id}/api/hi`, {}, { token: app.token }), 403, "forbidden");
  });
});
