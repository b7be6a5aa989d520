import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { verifiedUser } from "./helpers/mail.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const source = (id: string) => `export const manifest = {
  id: ${JSON.stringify(id)},
  routes: { look: { access: "read" }, bump: { access: "write" } },
};
export default {
  async fetch(request) {
    return Response.json({ ok: true, value: { role: request.headers.get("x-svc-role") } });
  },
};
`;

/** Access that changes (links, transfers, removals) and what it leaves behind. */
describeEachDialect("access after changes", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let slug: string;
  let teamId: string;
  const form = (user: FixtureUser) => ({ cookie: user.cookie, headers: { origin: server.config.baseUrl } });

  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());
  beforeEach(async () => {
    owner = await makeUser(server);
    await server.ctx.users.setPlan(owner.handle, "pro");
    slug = `a-${owner.handle}`;
    const created = await server.client.post("/api/v1/teams", { slug }, { token: owner.token });
    expect(created.status).toBe(201);
    teamId = created.body.team.id;
  });

  async function join(user: FixtureUser & { email: string }, role: "admin" | "member"): Promise<string> {
    const invited = await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: user.email, role }, { token: owner.token });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect((await server.client.post(`/api/v1/team-invitations/${invited.body.invitation.id}/accept`, undefined, form(user))).status).toBe(200);
    return invited.body.invitation.id as string;
  }

  const newApp = async (user: FixtureUser, id: string) => {
    const created = await server.client.post("/app", { module: source(id) }, { token: user.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  };

  it("a person who opened an end-user share link keeps that role when the app stops being open to all signed-in users", async () => {
    const appId = await newApp(owner, "open-then-private");
    expect((await server.client.put(`/app/${appId}/visibility`, { visibility: "signed-in" }, { token: owner.token })).status).toBe(200);
    const link = (await server.client.post(`/api/v1/apps/${appId}/share-links`, { role: "end-user" }, { token: owner.token })).body.link.url as string;
    const bob = await makeUser(server);
    const taken = await server.client.post("/api/v1/share-links/accept", { token: link.slice(link.lastIndexOf("/") + 1) }, { token: bob.token });
    expect(taken.body).toMatchObject({ ok: true, role: "end-user" });
    expect((await server.client.put(`/app/${appId}/visibility`, { visibility: "private" }, { token: owner.token })).status).toBe(200);
    // The link is live and was opened by bob: he holds its role.
    const ran = await server.client.post(`/app/${appId}/api/bump`, {}, { token: bob.token });
    expect(ran.status, JSON.stringify(ran.body)).toBe(200);
  });

  it("a removed team member's earlier accept does not answer ok as if they had joined", async () => {
    const dana = await verifiedUser(server);
    const invitationId = await join(dana, "member");
    const removed = await server.client.delete(`/api/v1/teams/${teamId}/members/${dana.id}`, { token: owner.token });
    expect(removed.body.removed).toBe(true);
    // The invitation is spent: it answers 403, not the "ok, already a member" of a repeat.
    expectError(await server.client.post(`/api/v1/team-invitations/${invitationId}/accept`, undefined, form(dana)), 403, "forbidden");
    expect(await server.ctx.teams.roleIn(teamId, dana.id)).toBeNull();
  });

  it("transfers: the previous owner and a removed team's members lose op calls, render tokens and the app list at once", async () => {
    const member = await verifiedUser(server);
    await join(member, "member");
    const appId = await newApp(owner, "moving");
    // Warm every cache with the owner's and a member's calls.
    expect((await server.client.post(`/app/${appId}/api/look`, {}, { token: owner.token })).body.value.role).toBe("owner");
    expect((await server.client.post(`/api/v1/apps/${appId}/transfer`, { team: slug }, { token: owner.token })).status).toBe(200);
    expect((await server.client.post(`/app/${appId}/api/look`, {}, { token: member.token })).body.value.role).toBe("team-member");
    const q = await openShell(server, `/app/${appId}`, member.cookie).catch(async () => openShell(server, `/@${slug}/moving`, member.cookie));
    const render = await openFrame(server, appId, q);
    expect((await server.client.post(`/app/${appId}/api/look`, {}, { token: render })).status).toBe(200);
    // Out of the team to the member; the owner (a team owner, no longer related) loses it.
    expect((await server.client.post(`/api/v1/apps/${appId}/transfer`, { user: member.handle }, { token: owner.token })).status).toBe(200);
    expectError(await server.client.post(`/app/${appId}/api/look`, {}, { token: owner.token }), 403, "forbidden");
    expect((await server.client.post(`/app/${appId}/api/look`, {}, { token: member.token })).body.value.role).toBe("owner");
    expect((await server.client.get("/app", { token: owner.token })).body.apps.find((a: { id: string }) => a.id === appId)).toBeUndefined();
  });
});
