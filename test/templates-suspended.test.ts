import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { PNG, uploadMedia } from "./helpers/templates.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const SOURCE = `export const manifest = {
  id: "phish-kit",
  displayName: "Totally legit bank login",
  description: "A small app",
  routes: { which: { access: "read" } },
};
export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };
`;

/** The public gallery lists no template of a suspended app or of a suspended owner's (DECISIONS §15), as its page and copies refuse them. */
describeEachDialect("templates of suspended apps", (dialect) => {
  let server: TestServer;
  let operator: FixtureUser;
  let owner: FixtureUser;
  let appId: string;

  beforeAll(async () => {
    server = await startServer({ dialect });
    operator = await makeUser(server);
    await server.ctx.users.setRole(operator.handle, "operator");
    owner = await makeUser(server);
    const created = await server.client.post("/app", { module: SOURCE }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id;
    const url = `/api/v1/apps/${appId}/template-listing`;
    expect((await server.client.patch(url, { title: "Bank login", summary: "Sign in to your bank", category: "productivity" }, { token: owner.token })).status).toBe(200);
    expect((await uploadMedia(server, appId, owner.token, { kind: "cover", alt: "cover" }, { data: PNG, type: "image/png", name: "cover.png" })).status).toBe(201);
    expect((await server.client.post(`${url}/publish`, undefined, { token: owner.token })).status).toBe(200);
  });
  afterAll(async () => server.close());

  it("a suspended app's published template leaves the public gallery (GET /api/v1/templates), and comes back when lifted", async () => {
    const before = await server.client.get("/api/v1/templates");
    expect(before.body.templates.map((t: { appId: string }) => t.appId)).toContain(appId);

    expect((await server.client.post(`/api/v1/admin/apps/${appId}/suspend`, { reason: "phishing" }, { token: operator.token })).status).toBe(200);
    // Its page and its copies are refused ...
    expect((await server.client.get(`/templates/${appId}`)).status).toBe(403);
    expectError(await server.client.post(`/app/${appId}/copy`, { manifest_id: "x-copy" }, { token: operator.token }), 403, "forbidden");
    // ... and the gallery no longer advertises it.
    const after = await server.client.get("/api/v1/templates");
    expect(after.body.templates.map((t: { appId: string }) => t.appId)).not.toContain(appId);
  });

  it("so does a suspended owner's", async () => {
    expect((await server.client.post(`/api/v1/admin/apps/${appId}/unsuspend`, {}, { token: operator.token })).status).toBe(200);
    expect((await server.client.get("/api/v1/templates")).body.templates.map((t: { appId: string }) => t.appId)).toContain(appId);
    expect((await server.client.post(`/api/v1/admin/users/${owner.handle}/suspend`, { reason: "abuse" }, { token: operator.token })).status).toBe(200);
    const after = await server.client.get("/api/v1/templates");
    expect(after.body.templates.map((t: { appId: string }) => t.appId)).not.toContain(appId);
  });
});
