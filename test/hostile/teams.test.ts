import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { verifiedUser } from "../helpers/mail.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { openFrame, openShell } from "../helpers/web.ts";

const source = (id: string) => `export const manifest = { id: ${JSON.stringify(id)}, routes: { look: { access: "read" }, bump: { access: "write" } } };
export default { async fetch() { return Response.json({ ok: true, value: "ran" }); } };
`;

type Member = FixtureUser & { email: string };

/**
 * Teams and shares, attacked: tokens that outlive the access they were minted under, a member's
 * app code acting through an admin's page, reaching across teams, hostile names and slugs.
 */
describeEachDialect("hostile: teams", (dialect) => {
  let server: TestServer;
  let admin: FixtureUser;
  let rival: FixtureUser;
  const teams: Record<"ours" | "theirs", { id: string; slug: string }> = { ours: { id: "", slug: "" }, theirs: { id: "", slug: "" } };
  const form = (user: FixtureUser) => ({ cookie: user.cookie, headers: { origin: server.config.baseUrl } });

  async function team(owner: FixtureUser, name: string): Promise<{ id: string; slug: string }> {
    await server.ctx.users.setPlan(owner.handle, "pro");
    const created = await server.client.post("/api/v1/teams", { slug: `h-${owner.handle}`, name }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.team;
  }

  async function join(teamId: string, by: FixtureUser, who: Member, role: "admin" | "member" = "member"): Promise<string> {
    const invited = await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: who.email, role }, { token: by.token });
    expect((await server.client.post(`/api/v1/team-invitations/${invited.body.invitation.id}/accept`, undefined, form(who))).status).toBe(200);
    return invited.body.invitation.id;
  }

  async function teamApp(manifestId: string, owner: FixtureUser, slug: string): Promise<string> {
    const id = (await server.client.post("/app", { module: source(manifestId) }, { token: owner.token })).body.id as string;
    expect((await server.client.post(`/api/v1/apps/${id}/transfer`, { team: slug }, { token: owner.token })).status).toBe(200);
    return id;
  }

  beforeAll(async () => {
    server = await startServer({ dialect });
    [admin, rival] = [await makeUser(server), await makeUser(server)];
    teams.ours = await team(admin, `<img src=x onerror=alert(1)> & "friends"`);
    teams.theirs = await team(rival, "Rivals");
  });
  afterAll(async () => server.close());

  it("a render token is worth nothing once its holder is removed from the team or their share is revoked", async () => {
    const member = await verifiedUser(server);
    await join(teams.ours.id, admin, member);
    const appId = await teamApp("render-outlives", admin, teams.ours.slug);
    const queryToken = await openShell(server, `/@${teams.ours.slug}/render-outlives`, member.cookie);
    const render = await openFrame(server, appId, queryToken);
    expect((await server.client.post(`/app/${appId}/api/bump`, {}, { token: render })).status).toBe(200);
    expect((await server.client.delete(`/api/v1/teams/${teams.ours.id}/members/${member.id}`, { token: admin.token })).body.removed).toBe(true);
    expectError(await server.client.post(`/app/${appId}/api/bump`, {}, { token: render }), 403, "forbidden");
    expectError(await server.client.post(`/app/${appId}/api/look`, {}, { token: render }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/assets`, { token: render }), 403, "forbidden");
    // Nor can the page carry on: no fresh token, no new frame, no live stream.
    expectError(await server.client.post(`/app/${appId}/render-token`, undefined, { token: render }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/frame?t=${queryToken}`), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/events`, { token: render }), 403, "forbidden");

    // The same for a personal app's share: revoked, the grantee's page token stops working.
    const owner = await makeUser(server);
    const bob = await makeUser(server);
    const personal = (await server.client.post("/app", { module: source("shared-render") }, { token: owner.token })).body.id as string;
    const share = await server.client.post(`/api/v1/apps/${personal}/shares`, { grantee: bob.handle, role: "end-user" }, { token: owner.token });
    await server.client.post(`/api/v1/apps/${personal}/shares/accept`, undefined, { token: bob.token });
    const bobRender = await openFrame(server, personal, await openShell(server, `/@${owner.handle}/shared-render`, bob.cookie));
    expect((await server.client.post(`/app/${personal}/api/bump`, {}, { token: bobRender })).status).toBe(200);
    await server.client.post(`/api/v1/apps/${personal}/shares/${share.body.shareId}/revoke`, undefined, { token: owner.token });
    expectError(await server.client.post(`/app/${personal}/api/bump`, {}, { token: bobRender }), 403, "forbidden");
    // And a page opened while the app was public stops working when it turns private.
    await server.client.put(`/app/${personal}/visibility`, { visibility: "public" }, { token: owner.token });
    const anonymousRender = await openFrame(server, personal, await openShell(server, `/@${owner.handle}/shared-render`));
    expect((await server.client.post(`/app/${personal}/api/look`, {}, { token: anonymousRender })).status).toBe(200);
    await server.client.put(`/app/${personal}/visibility`, { visibility: "private" }, { token: owner.token });
    expectError(await server.client.post(`/app/${personal}/api/look`, {}, { token: anonymousRender }), 403, "forbidden");
  });

  it("app code on an admin's page cannot manage the app with the admin's render token", async () => {
    const appId = await teamApp("ui-escalation", admin, teams.ours.slug);
    const render = await openFrame(server, appId, await openShell(server, `/@${teams.ours.slug}/ui-escalation`, admin.cookie));
    // What a member's hostile UI script would try from the admin's browser.
    expectError(await server.client.delete(`/app/${appId}`, { token: render }), 403, "forbidden");
    expectError(await server.client.put(`/app/${appId}/visibility`, { visibility: "public" }, { token: render }), 401, "unauthorized");
    expectError(await server.client.put(`/app/${appId}/icon`, { emoji: "💀", bg: "#000000" }, { token: render }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/secrets`, { token: render }), 403, "forbidden");
    expectError(await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: rival.handle }, { token: render }), 401, "unauthorized");
    expectError(await server.client.post(`/api/v1/apps/${appId}/transfer`, { team: teams.theirs.slug }, { token: render }), 401, "unauthorized");
    expectError(await server.client.post(`/api/v1/teams/${teams.ours.id}/invitations`, { email: "x@evil.test", role: "admin" }, { token: render }), 401, "unauthorized");
    expect((await server.client.get(`/app/${appId}`, { token: admin.token, headers: { accept: "text/html" } })).status).toBeLessThan(400);
  });

  it("nothing reaches across teams: invitations, members, exposure, ledger, transfer", async () => {
    const victim = await verifiedUser(server);
    const invited = await server.client.post(`/api/v1/teams/${teams.theirs.id}/invitations`, { email: victim.email }, { token: rival.token });
    const theirInvite = invited.body.invitation.id as string;
    expectError(await server.client.post(`/api/v1/team-invitations/${theirInvite}/resend`, undefined, form(admin)), 403, "forbidden");
    expectError(await server.client.post(`/api/v1/team-invitations/${theirInvite}/revoke`, undefined, { token: admin.token }), 403, "forbidden");
    expectError(await server.client.get(`/api/v1/teams/${teams.theirs.id}/invitations`, { token: admin.token }), 403, "forbidden");
    expectError(await server.client.get(`/api/v1/teams/${teams.theirs.id}/exposure`, { token: admin.token }), 403, "forbidden");
    expectError(await server.client.get(`/api/v1/teams/${teams.theirs.id}/shares`, { token: admin.token }), 403, "forbidden");
    expectError(await server.client.delete(`/api/v1/teams/${teams.theirs.id}/members/${rival.id}`, { token: admin.token }), 403, "forbidden");
    // Moving one's own app into someone else's team would plant code in their namespace.
    const mine = (await server.client.post("/app", { module: source("plant") }, { token: admin.token })).body.id as string;
    expectError(await server.client.post(`/api/v1/apps/${mine}/transfer`, { team: teams.theirs.slug }, { token: admin.token }), 403, "forbidden");
    // Their invitation is still the victim's to take.
    expect((await server.client.post(`/api/v1/team-invitations/${theirInvite}/accept`, undefined, form(victim))).status).toBe(200);
  });

  it("a member cannot promote themselves, and a team's account is never a way in", async () => {
    const member = await verifiedUser(server);
    await join(teams.ours.id, admin, member);
    expectError(await server.client.post(`/api/v1/teams/${teams.ours.id}/invitations`, { email: member.email, role: "admin" }, { token: member.token }), 403, "forbidden");
    expectError(await server.client.delete(`/api/v1/teams/${teams.ours.id}/members/${admin.id}`, { token: member.token }), 403, "forbidden");
    // Signing in as the team by its slug or its placeholder address, with the placeholder hash or anything else.
    const account = await server.ctx.users.byHandle(teams.ours.slug);
    for (const login of [teams.ours.slug, account?.email ?? ""]) {
      for (const password of ["!team", "", "correct horse battery staple"]) {
        const res = await server.client.post("/api/auth/login", { login, password });
        expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
        expect(res.headers.get("set-cookie") ?? "").not.toMatch(/svc_session=[^;]+/);
      }
    }
    // Nobody can sign up with the team's placeholder address and so come to own its mail.
    await expect(server.ctx.users.create({ email: account?.email ?? "", handle: `p${member.handle}`, password: "correct horse battery staple" })).rejects.toMatchObject({ kind: "name_taken" });
  });

  it("hostile names and slugs are refused cleanly or shown inert", async () => {
    const cases: [unknown, number, string][] = [
      ["a\u0000b", 400, "invalid_request"],
      ["ＡＤＭＩＮ", 400, "invalid_handle"],
      ["../../etc", 400, "invalid_handle"],
      ["x".repeat(65), 400, "invalid_request"],
      [["array"], 400, "invalid_request"],
      ["-leading", 400, "invalid_handle"],
    ];
    for (const [slug, status, kind] of cases) expectError(await server.client.post("/api/v1/teams", { slug }, { token: admin.token }), status, kind);
    expectError(await server.client.post("/api/v1/teams", { slug: "fine-slug-x", name: "n".repeat(201) }, { token: admin.token }), 400, "invalid_request");
    expectError(await server.client.post("/api/v1/teams", { slug: "fine-slug-y", name: "   " }, { token: admin.token }), 400, "invalid_request");
    expectError(await server.client.post(`/api/v1/apps/00000000-0000-4000-8000-000000000000/transfer`, { user: "../x" }, { token: admin.token }), 404, "app_not_found");

    // The team's name is markup-shaped: the invitation page and the joined page show it as text.
    const member = await verifiedUser(server);
    const invited = await server.client.post(`/api/v1/teams/${teams.ours.id}/invitations`, { email: member.email }, { token: admin.token });
    const page = await server.client.get(`/team-invitations/${invited.body.invitation.id}`, { cookie: member.cookie, headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(page.text).toContain("&lt;img src=x onerror=alert(1)&gt; &amp; &quot;friends&quot;");
    expect(page.text).not.toContain("<img src=x");
    const joined = await server.client.request("POST", `/team-invitations/${invited.body.invitation.id}`, undefined, {
      cookie: member.cookie,
      raw: "",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: server.config.baseUrl },
    });
    expect(joined.status).toBe(200);
    expect(joined.text).not.toContain("<img src=x");
  });
});
