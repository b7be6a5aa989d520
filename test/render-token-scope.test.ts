import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { verifiedUser } from "./helpers/mail.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const source = (marker: string, id = "render-app") => `export const manifest = {
  id: ${JSON.stringify(id)},
  routes: { look: { access: "read", input: { type: "object" } } },
};
export default { async fetch() { return Response.json({ ok: true, value: ${JSON.stringify(marker)} }); } };
`;

/**
 * A render token is the page's credential (spec Authentication: "used by sandboxed iframes without
 * cookies"), and the app's UI script holds it: whoever the page was opened for, it views and never
 * reads or writes the source (DECISIONS §3; Apps.load). The token of a collaborator's page, or of a
 * team member's, was let through as that person: the app's UI, or anyone holding the 24-hour query
 * token of that page's URL, could rewrite the app's code.
 */
describe("render tokens never read or write an app's source, whoever's page they are", () => {
  let server: TestServer;
  let owner: FixtureUser;
  let collaborator: FixtureUser;
  let admin: FixtureUser;
  let member: FixtureUser & { email: string };
  let appId: string;
  let teamAppId: string;
  let teamSlug: string;

  beforeAll(async () => {
    server = await startServer();
    owner = await makeUser(server);
    collaborator = await makeUser(server);
    appId = (await server.client.post("/app", { module: source("v1") }, { token: owner.token })).body.id;
    await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: collaborator.handle, role: "collaborator" }, { token: owner.token });
    expect((await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: collaborator.token })).status).toBe(200);

    admin = await makeUser(server, "pro");
    member = await verifiedUser(server);
    teamSlug = `team-${admin.handle}`;
    const team = await server.client.post("/api/v1/teams", { slug: teamSlug }, { token: admin.token });
    const invited = await server.client.post(`/api/v1/teams/${team.body.team.id}/invitations`, { email: member.email }, { token: admin.token });
    expect((await server.client.post(`/api/v1/team-invitations/${invited.body.invitation.id}/accept`, undefined, { cookie: member.cookie, headers: { origin: server.config.baseUrl } })).status).toBe(200);
    teamAppId = (await server.client.post("/app", { module: source("t1", "team-render-app") }, { token: admin.token })).body.id;
    expect((await server.client.post(`/api/v1/apps/${teamAppId}/transfer`, { team: teamSlug }, { token: admin.token })).status).toBe(200);
  });
  afterAll(async () => server.close());

  it("baseline: the owner's own page token cannot write the source", async () => {
    const render = await openFrame(server, appId, await openShell(server, `/@${owner.handle}/render-app`, owner.cookie));
    expectError(await server.client.put(`/app/${appId}`, { module: source("owner-page") }, { token: render }), 403, "forbidden");
  });

  it("a collaborator's page token cannot replace the source (PUT /app/{id})", async () => {
    const render = await openFrame(server, appId, await openShell(server, `/@${owner.handle}/render-app`, collaborator.cookie));
    expectError(await server.client.put(`/app/${appId}`, { module: source("written-by-the-ui") }, { token: render }), 403, "forbidden");
  });

  it("the query render token in a collaborator's frame URL cannot edit the source (PATCH /app/{id}/source)", async () => {
    const query = await openShell(server, `/@${owner.handle}/render-app`, collaborator.cookie);
    const current = await server.client.get(`/app/${appId}/source`, { token: owner.token });
    const patched = await server.client.patch(`/app/${appId}/source`, { edits: [{ bucket: "module", old_string: "routes:", new_string: "routes :" }], expected_revision: current.body.revision }, { token: query });
    expectError(patched, 403, "forbidden");
  });

  it("a collaborator's page token cannot read the source, nor take a snapshot", async () => {
    const render = await openFrame(server, appId, await openShell(server, `/@${owner.handle}/render-app`, collaborator.cookie));
    expectError(await server.client.get(`/app/${appId}/source`, { token: render }), 403, "forbidden");
    expectError(await server.client.post(`/app/${appId}/snapshots`, {}, { token: render }), 403, "forbidden");
    // Its page still works: the token still calls the app's ops.
    expect((await server.client.post(`/app/${appId}/api/look`, {}, { token: render })).status).toBe(200);
  });

  it("a team member's page token cannot replace a team app's source", async () => {
    const render = await openFrame(server, teamAppId, await openShell(server, `/@${teamSlug}/team-render-app`, member.cookie));
    expectError(await server.client.put(`/app/${teamAppId}`, { module: source("written-by-the-ui", "team-render-app") }, { token: render }), 403, "forbidden");
  });
});
