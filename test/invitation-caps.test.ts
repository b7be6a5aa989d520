import { afterAll, beforeAll, expect, it } from "vitest";
import { DAY, type ManualClock } from "../src/config/clock.ts";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = (id: string) => `export const manifest = {
  id: ${JSON.stringify(id)},
  routes: { look: { access: "read" } },
};
export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };
`;

/**
 * The daily invitation caps (DECISIONS §9: 50 a day, 429 invite_cap_reached) count invitations
 * sent: not grants made by opening a share link, and not undone by a revoke; a team's re-sends
 * mail the address again and count too.
 */
describeEachDialect("invitation caps", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());

  const newApp = async (user: FixtureUser, id: string) => {
    const created = await server.client.post("/app", { module: source(id) }, { token: user.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  };

  it("people opening an owner's share link do not use up the owner's 50 invitations a day", async () => {
    const owner = await makeUser(server);
    const appId = await newApp(owner, "link-cap");
    const made = await server.client.post(`/api/v1/apps/${appId}/share-links`, { role: "viewer" }, { token: owner.token });
    expect(made.status).toBe(201);
    const url = made.body.link.url as string;
    const token = url.slice(url.lastIndexOf("/") + 1);
    for (let i = 0; i < 50; i++) {
      const visitor = await makeUser(server);
      expect((await server.client.post("/api/v1/share-links/accept", { token }, { token: visitor.token })).status).toBe(200);
    }
    // The owner has sent no invitation today: this one must go out.
    const friend = await makeUser(server);
    const invited = await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: friend.handle }, { token: owner.token });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  });

  it("invite then revoke, repeated, cannot send more than 50 invitation mails a day", async () => {
    const owner = await makeUser(server);
    const appId = await newApp(owner, "revoke-cap");
    const target = "victim@example.test";
    let sent = 0;
    let refused: { status: number; body: { error?: { kind?: string } } } | null = null;
    for (let i = 0; i < 60; i++) {
      const res = await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: target }, { token: owner.token });
      if (res.status !== 201) {
        refused = res;
        break;
      }
      sent += 1;
      const revoked = await server.client.post(`/api/v1/apps/${appId}/shares/${res.body.shareId}/revoke`, undefined, { token: owner.token });
      expect(revoked.status).toBe(200);
    }
    expect((await server.ctx.mailer.to(target, 1000)).length).toBeLessThanOrEqual(50);
    expect(sent).toBe(50);
    expect(refused?.status).toBe(429);
    expect(refused?.body.error?.kind).toBe("invite_cap_reached");
    // A day later the inviter may send again.
    (server.clock as ManualClock).advance(DAY);
    expect((await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: target }, { token: owner.token })).status).toBe(201);
  });

  it("re-sending a team invitation cannot send more than 50 invitation mails a day", async () => {
    const owner = await makeUser(server);
    await server.ctx.users.setPlan(owner.handle, "pro");
    const team = await server.client.post("/api/v1/teams", { slug: `c-${owner.handle}` }, { token: owner.token });
    expect(team.status).toBe(201);
    const teamId = team.body.team.id as string;
    const form = { cookie: owner.cookie, headers: { origin: server.config.baseUrl } };
    const target = "team-victim@example.test";
    const first = await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: target }, { token: owner.token });
    expect(first.status).toBe(201);
    let id = first.body.invitation.id as string;
    let last = 0;
    for (let i = 0; i < 60; i++) {
      const res = await server.client.post(`/api/v1/team-invitations/${id}/resend`, undefined, form);
      last = res.status;
      if (res.status !== 200) {
        expectError(res, 429, "invite_cap_reached");
        break;
      }
      id = res.body.invitation.id as string;
    }
    expect(last).toBe(429);
    expect((await server.ctx.mailer.to(target, 1000)).length).toBeLessThanOrEqual(50);
  });
});
