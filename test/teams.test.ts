import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { DAY, type ManualClock } from "../src/config/clock.ts";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { mailedLink, verifiedUser } from "./helpers/mail.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const source = (id: string, marker = "v1") => `export const manifest = {
  id: ${JSON.stringify(id)},
  routes: { look: { access: "read" }, bump: { access: "write" }, tick: { access: "write" }, tock: { access: "write" }, tack: { access: "write" } },
};
export default {
  async fetch(request, env) {
    return Response.json({ ok: true, value: { role: request.headers.get("x-svc-role"), marker: ${JSON.stringify(marker)}, secret: env.API_KEY ?? null } });
  },
};
`;

const INVITE_LINK = /https?:\/\/\S+\/team-invitations\/[0-9a-f-]{36}/;

/** Issue 15, teams: create, invitations by email, membership roles on team apps, transfer, exposure and the ledger. */
describeEachDialect("teams", (dialect) => {
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
    slug = `t-${owner.handle}`;
    const created = await server.client.post("/api/v1/teams", { slug, name: "Team of " + owner.handle }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    teamId = created.body.team.id;
  });

  /** Invites `user` by email as `role` and accepts from their browser session; answers the invitation's id. */
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

  async function teamApp(manifestId: string, token = owner.token): Promise<string> {
    const created = await server.client.post("/app", { module: source(manifestId) }, { token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const moved = await server.client.post(`/api/v1/apps/${created.body.id}/transfer`, { team: slug }, { token });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    return created.body.id;
  }

  it("creates teams on paid plans only; the slug shares the handles' namespace", async () => {
    expect((await server.client.get("/api/v1/teams", { token: owner.token })).body.teams).toEqual([
      expect.objectContaining({ id: teamId, slug, plan: "pro", role: "owner", name: `Team of ${owner.handle}` }),
    ]);
    const free = await makeUser(server);
    const refused = expectError(await server.client.post("/api/v1/teams", { slug: `f-${free.handle}` }, { token: free.token }), 403, "plan_required");
    expect(refused).toMatchObject({ plan: "free", feature: "teams", upgradeUrl: `${server.config.baseUrl}/@${free.handle}/billing` });
    expect(refused).not.toHaveProperty("limit");

    expectError(await server.client.post("/api/v1/teams", { slug }, { token: owner.token }), 409, "team_slug_taken");
    expectError(await server.client.post("/api/v1/teams", { slug: free.handle }, { token: owner.token }), 409, "team_slug_taken");
    expectError(await server.client.post("/api/v1/teams", { slug: "Not A Slug!" }, { token: owner.token }), 400, "invalid_handle");
    expectError(await server.client.post("/api/v1/teams", { slug: "ok-slug", extra: 1 }, { token: owner.token }), 400, "invalid_request");
    expectError(await server.client.post("/api/v1/teams", { slug: "anon-slug" }), 401, "sign_in_required");
    // A person cannot take a team's slug as a handle, nor sign in as the team.
    await expect(server.ctx.users.create({ email: "x@example.test", handle: slug, password: "correct horse battery staple" })).rejects.toMatchObject({ kind: "handle_taken" });
    expect(await server.ctx.users.authenticate(slug, "!team")).toBeNull();
    expectError(await server.client.post("/api/auth/login", { login: slug, password: "!team" }), 401, "unauthorized");
    // Nobody shares an app with a team as if it were a person.
    const app = (await server.client.post("/app", { module: source("solo") }, { token: free.token })).body.id;
    expectError(await server.client.post(`/api/v1/apps/${app}/shares`, { grantee: slug }, { token: free.token }), 404, "grantee_not_found");
  });

  it("invitations: mailed, accepted only from a session by the verified address, one pending per address, re-sendable", async () => {
    const dana = await verifiedUser(server);
    const invited = await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: dana.email.toUpperCase() }, { token: owner.token });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect(invited.body.invitation).toMatchObject({ email: dana.email, role: "member", status: "pending" });
    const id = invited.body.invitation.id as string;
    expect(await mailedLink(server, dana.email, INVITE_LINK)).toBe(`/team-invitations/${id}`);
    expectError(await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: dana.email }, { token: owner.token }), 409, "already_invited");

    // A personal access token cannot accept (spec: session cookie only), nor can no credential.
    expectError(await server.client.post(`/api/v1/team-invitations/${id}/accept`, undefined, { token: dana.token }), 401, "unauthorized");
    expectError(await server.client.post(`/api/v1/team-invitations/${id}/accept`), 401, "sign_in_required");
    // The wrong recipient: 403, relayed; so is someone holding an unverified copy of the address.
    const eve = await verifiedUser(server);
    expectError(await server.client.post(`/api/v1/team-invitations/${id}/accept`, undefined, form(eve)), 403, "forbidden");
    const unverified = await makeUser(server);
    const other = await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: `${unverified.handle}@example.test` }, { token: owner.token });
    expectError(await server.client.post(`/api/v1/team-invitations/${other.body.invitation.id}/accept`, undefined, form(unverified)), 403, "forbidden");
    // A cookie from another site is refused before anything else.
    expectError(await server.client.post(`/api/v1/team-invitations/${id}/accept`, undefined, { cookie: dana.cookie, headers: { origin: "https://evil.example" } }), 403, "forbidden");

    // Re-send: a new invitation and expiry; the old link stops working; tokens cannot re-send.
    (server.clock as ManualClock).advance(1000);
    expectError(await server.client.post(`/api/v1/team-invitations/${id}/resend`, undefined, { token: owner.token }), 401, "unauthorized");
    const resent = await server.client.post(`/api/v1/team-invitations/${id}/resend`, undefined, form(owner));
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    const fresh = resent.body.invitation.id as string;
    expect(fresh).not.toBe(id);
    expect(Date.parse(resent.body.invitation.expiresAt)).toBeGreaterThan(Date.parse(invited.body.invitation.expiresAt));
    expect(await mailedLink(server, dana.email, INVITE_LINK)).toBe(`/team-invitations/${fresh}`);
    expectError(await server.client.post(`/api/v1/team-invitations/${id}/resend`, undefined, form(owner)), 404, "not_found");
    expect((await server.client.get(`/api/v1/teams/${teamId}/invitations`, { token: owner.token })).body.invitations.filter((i: { email: string }) => i.email === dana.email)).toHaveLength(1);
    expectError(await server.client.post(`/api/v1/team-invitations/${id}/accept`, undefined, form(dana)), 403, "forbidden");

    expect((await server.client.get("/api/v1/team-invitations", { token: dana.token })).body.invitations).toEqual([expect.objectContaining({ id: fresh, teamSlug: slug })]);
    expect((await server.client.post(`/api/v1/team-invitations/${fresh}/accept`, undefined, form(dana))).body).toEqual({ ok: true, teamId });
    expect((await server.client.post(`/api/v1/team-invitations/${fresh}/accept`, undefined, form(dana))).body).toEqual({ ok: true, teamId });
    expectError(await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: dana.email }, { token: owner.token }), 409, "already_member");
    const members = (await server.client.get(`/api/v1/teams/${teamId}`, { token: dana.token })).body.members;
    expect(members.map((m: { handle: string; role: string }) => [m.handle, m.role])).toEqual([
      [owner.handle, "owner"],
      [dana.handle, "member"],
    ]);
    // Members do not invite; strangers do not see the team.
    expectError(await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: "z@example.test" }, { token: dana.token }), 403, "forbidden");
    expectError(await server.client.get(`/api/v1/teams/${teamId}`, { token: eve.token }), 403, "forbidden");
    expectError(await server.client.get(`/api/v1/teams/00000000-0000-4000-8000-000000000000`, { token: eve.token }), 404, "not_found");
    expectError(await server.client.get(`/api/v1/teams/not-a-team`, { token: eve.token }), 400, "invalid_id");

    // Invitations expire after 14 days.
    const late = await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: eve.email }, { token: owner.token });
    (server.clock as ManualClock).advance(14 * DAY + 1);
    // Eve's session has lapsed as well by then: she signs in again.
    const signedIn = { ...eve, cookie: `svc_session=${await server.ctx.sessions.create(eve.id)}` };
    expectError(await server.client.post(`/api/v1/team-invitations/${late.body.invitation.id}/accept`, undefined, form(signedIn)), 403, "forbidden");
  });

  it("the invitation page: sign-in first, only for the invited person, joined by the form with our Origin", async () => {
    const dana = await verifiedUser(server);
    const invited = await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: dana.email }, { token: owner.token });
    const path = await mailedLink(server, dana.email, INVITE_LINK);
    const html = { accept: "text/html" };
    const signedOut = await server.client.get(path, { headers: html });
    expect(signedOut.status).toBe(200);
    expect(signedOut.text).toMatch(/<form[^>]+method="post"/);
    expect(signedOut.text).toContain("Sign in");
    const stranger = await verifiedUser(server);
    expect((await server.client.get(path, { cookie: stranger.cookie, headers: html })).status).toBe(404);
    expect((await server.client.get("/team-invitations/not-an-id", { cookie: dana.cookie, headers: html })).status).toBe(400);
    const page = await server.client.get(path, { cookie: dana.cookie, headers: html });
    expect(page.status).toBe(200);
    expect(page.text).toContain(`@${slug}`);
    const post = (origin: string) =>
      server.client.request("POST", path, undefined, { cookie: dana.cookie, raw: "", headers: { "content-type": "application/x-www-form-urlencoded", origin } });
    expect((await post("https://evil.example")).status).toBe(403);
    expect(await server.ctx.teams.roleIn(teamId, dana.id)).toBeNull();
    const appId = await teamApp("landing");
    const joined = await post(server.config.baseUrl);
    expect(joined.status).toBe(200);
    expect(joined.text).toContain(`/@${slug}/landing`);
    expect(await server.ctx.teams.roleIn(teamId, dana.id)).toBe("member");
    expect(invited.body.invitation.id).toBe(path.split("/").at(-1));
    expect((await server.client.get("/app", { token: dana.token })).body.apps.map((a: { id: string }) => a.id)).toContain(appId);
  });

  it("team apps: /@slug URLs, members edit and run, admins hold the owner's rights, the team's plan sets the caps; removal cuts access", async () => {
    const admin = await verifiedUser(server);
    const member = await verifiedUser(server);
    await join(admin, "admin");
    await join(member, "member");
    const created = await server.client.post("/app", { module: source("team-app") }, { token: owner.token });
    const appId = created.body.id as string;
    expect((await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: "s3cret-value" }, { token: owner.token })).status).toBe(200);
    expectError(await server.client.get(`/app/${appId}/source`, { token: member.token }), 403, "forbidden");

    const moved = await server.client.post(`/api/v1/apps/${appId}/transfer`, { team: slug }, { token: owner.token });
    expect(moved.body).toEqual({ ok: true, id: appId, owner: slug, url: `${server.config.baseUrl}/@${slug}/team-app`, moved: true });
    // The secret moved with it, sealed again for the team; the page lives at the team's URL.
    expect((await server.client.post(`/app/${appId}/api/look`, {}, { token: owner.token })).body.value).toMatchObject({ role: "team-admin", secret: "s3cret-value" });
    const redirect = await server.client.get(`/app/${appId}`, { token: member.token, headers: { accept: "text/html" } });
    expect(redirect.headers.get("location")).toBe(`${server.config.baseUrl}/@${slug}/team-app`);
    expect((await server.client.get(`/@${slug}/team-app`, { cookie: member.cookie, headers: { accept: "text/html" } })).status).toBe(200);

    const listed = async (user: FixtureUser) => (await server.client.get("/app", { token: user.token })).body.apps.find((a: { id: string }) => a.id === appId);
    expect(await listed(owner)).toMatchObject({ role: "team-admin" });
    expect(await listed(admin)).toMatchObject({ role: "team-admin" });
    expect(await listed(member)).toMatchObject({ role: "team-member", url: `${server.config.baseUrl}/@${slug}/team-app` });

    // A member edits and runs, never deletes, shares, transfers or reads secrets.
    expect((await server.client.put(`/app/${appId}`, { module: source("team-app", "v2") }, { token: member.token })).status).toBe(200);
    expect((await server.client.post(`/app/${appId}/api/bump`, {}, { token: member.token })).body.value).toMatchObject({ role: "team-member", marker: "v2" });
    expectError(await server.client.delete(`/app/${appId}`, { token: member.token }), 403, "forbidden");
    expectError(await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: owner.handle }, { token: member.token }), 403, "forbidden");
    expectError(await server.client.post(`/api/v1/apps/${appId}/transfer`, { user: member.handle }, { token: member.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/secrets`, { token: member.token }), 403, "forbidden");
    // An admin manages: secrets, activity, sharing (a team member already has access).
    expect((await server.client.get(`/app/${appId}/secrets`, { token: admin.token })).body).toMatchObject({ names: ["API_KEY"] });
    expect((await server.client.get(`/app/${appId}/activity`, { token: admin.token })).status).toBe(200);
    expectError(await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: member.handle }, { token: admin.token }), 409, "grantee_already_has_access");

    // Caps and the upgrade link are the team's: the free plan's 3 routines per app, billed to @slug.
    await server.ctx.users.setPlan(slug, "free");
    for (const op of ["bump", "tick", "tock"]) expect((await server.client.post(`/api/v1/apps/${appId}/routines`, { op, interval: "daily" }, { token: member.token })).status).toBe(201);
    const capped = expectError(await server.client.post(`/api/v1/apps/${appId}/routines`, { op: "tack", interval: "daily" }, { token: member.token }), 429, "routine_limit_exceeded");
    expect(capped).toMatchObject({ plan: "free", max: 3, upgradeUrl: `${server.config.baseUrl}/@${slug}/billing` });
    expect((await server.client.get("/api/v1/routines", { token: member.token })).body.routines).toHaveLength(3);

    // Removing a member cuts access at once; the response says their webhooks stay.
    const removed = await server.client.delete(`/api/v1/teams/${teamId}/members/${member.id}`, { token: admin.token });
    expect(removed.body).toMatchObject({ ok: true, removed: true, note: expect.stringMatching(/webhooks and share links/) });
    expectError(await server.client.post(`/app/${appId}/api/bump`, {}, { token: member.token }), 403, "forbidden");
    expect(await listed(member)).toBeUndefined();
    // Admins cannot remove owners, and the last owner stays.
    expectError(await server.client.delete(`/api/v1/teams/${teamId}/members/${owner.id}`, { token: admin.token }), 403, "forbidden");
    expectError(await server.client.delete(`/api/v1/teams/${teamId}/members/${owner.id}`, { token: owner.token }), 403, "forbidden");
  });

  it("transfer: into a team the caller administers, out only to a member, a taken manifest id is a conflict", async () => {
    const member = await verifiedUser(server);
    await join(member, "member");
    const appId = await teamApp("movable");
    // Out of the team to a member; back in again.
    const out = await server.client.post(`/api/v1/apps/${appId}/transfer`, { user: member.handle }, { token: owner.token });
    expect(out.body).toMatchObject({ owner: member.handle, url: `${server.config.baseUrl}/@${member.handle}/movable`, moved: true });
    expect((await server.client.get("/app", { token: member.token })).body.apps.find((a: { id: string }) => a.id === appId)).toMatchObject({ role: "owner" });
    // The member administers no team, so cannot move it in; the team's owner now has no say over it.
    expectError(await server.client.post(`/api/v1/apps/${appId}/transfer`, { team: slug }, { token: member.token }), 403, "forbidden");
    expectError(await server.client.post(`/api/v1/apps/${appId}/transfer`, { team: slug }, { token: owner.token }), 403, "forbidden");

    const stranger = await makeUser(server);
    const second = await teamApp("taken");
    const clash = (await server.client.post("/app", { module: source("taken") }, { token: member.token })).body.id as string;
    const conflict = expectError(await server.client.post(`/api/v1/apps/${second}/transfer`, { user: member.handle }, { token: owner.token }), 409, "manifest_id_conflict");
    expect(conflict).toMatchObject({ existingAppId: clash, recovery: { kind: "rename" } });
    expectError(await server.client.post(`/api/v1/apps/${second}/transfer`, { user: stranger.handle }, { token: owner.token }), 403, "forbidden");
    expectError(await server.client.post(`/api/v1/apps/${second}/transfer`, { team: "no-such-team" }, { token: owner.token }), 404, "not_found");
    expectError(await server.client.post(`/api/v1/apps/${second}/transfer`, { team: slug, user: owner.handle }, { token: owner.token }), 400, "invalid_request");
    expectError(await server.client.post(`/api/v1/apps/${second}/transfer`, {}, { token: owner.token }), 400, "invalid_request");
    expect((await server.client.post(`/api/v1/apps/${second}/transfer`, { team: slug }, { token: owner.token })).body.moved).toBe(false);
    // An unclaimed app has no owner to transfer it.
    const anon = await server.client.post("/app", { module: source("anon") });
    expectError(await server.client.post(`/api/v1/apps/${anon.body.id}/transfer`, { team: slug }, { token: owner.token }), 403, "forbidden");
  });

  it("exposure counts a hand-built team of 7 apps once each by widest audience, in JSON and CSV; the ledger lists grants, invitations and links", async () => {
    const outsider = await makeUser(server);
    const member = await verifiedUser(server);
    await join(member, "member");
    const ids: Record<string, string> = {};
    for (const name of ["a", "b", "c", "d", "e", "f", "g"]) ids[name] = await teamApp(`exp-${name}`);
    const at = (name: string) => ids[name] ?? "";
    const visibility = (name: string, value: string) => server.client.put(`/app/${at(name)}/visibility`, { visibility: value }, { token: owner.token });
    expect((await visibility("a", "public")).status).toBe(200);
    expect((await visibility("b", "public")).status).toBe(200);
    expect((await visibility("c", "signed-in")).status).toBe(200);
    const step = () => (server.clock as ManualClock).advance(1000);
    // a: public and shared with an outsider (still counts as public; the share is external).
    step();
    expect((await server.client.post(`/api/v1/apps/${at("a")}/shares`, { grantee: outsider.handle, role: "viewer" }, { token: owner.token })).status).toBe(201);
    // d: private, shared with an outsider who accepted.
    step();
    expect((await server.client.post(`/api/v1/apps/${at("d")}/shares`, { grantee: outsider.handle }, { token: owner.token })).status).toBe(201);
    expect((await server.client.post(`/api/v1/apps/${at("d")}/shares/accept`, undefined, { token: outsider.token })).status).toBe(200);
    // e: private with a live share link only.
    step();
    expect((await server.client.post(`/api/v1/apps/${at("e")}/share-links`, { role: "viewer" }, { token: owner.token })).status).toBe(201);
    // f: private with an email invitation to an address outside the team.
    step();
    expect((await server.client.post(`/api/v1/apps/${at("f")}/shares`, { grantee: "someone@elsewhere.test" }, { token: member.token })).status).toBe(403);
    expect((await server.client.post(`/api/v1/apps/${at("f")}/shares`, { grantee: "someone@elsewhere.test" }, { token: owner.token })).status).toBe(201);
    // g: private, shared with no one.

    const exposure = await server.client.get(`/api/v1/teams/${teamId}/exposure`, { token: owner.token });
    expect(exposure.body).toEqual({ ok: true, exposure: { public: 2, template: 0, "signed-in": 1, shared: 3, private: 1, externalShares: 3 } });
    const csv = await server.client.get(`/api/v1/teams/${teamId}/exposure?format=csv`, { token: owner.token });
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csv.text).toBe("public,template,signed-in,shared,private,externalShares\r\n2,0,1,3,1,3\r\n");
    expect((await server.client.get(`/api/v1/teams/${teamId}/exposure?format=xml`, { token: owner.token })).body.exposure.public).toBe(2);
    expectError(await server.client.get(`/api/v1/teams/${teamId}/exposure`, { token: member.token }), 403, "forbidden");
    expectError(await server.client.get(`/api/v1/teams/${teamId}/exposure`, { token: outsider.token }), 403, "forbidden");

    const ledger = await server.client.get(`/api/v1/teams/${teamId}/shares`, { token: owner.token });
    const rows = ledger.body.shares.map((r: { type: string; appId: string; status: string; external: boolean }) => [r.type, r.appId, r.status, r.external]);
    expect(rows).toEqual([
      ["invitation", at("f"), "invited", true],
      ["link", at("e"), "live", false],
      ["grant", at("d"), "accepted", true],
      ["invitation", at("a"), "pending", true],
    ]);
    const oldest = await server.client.get(`/api/v1/teams/${teamId}/shares?sort=oldest`, { token: owner.token });
    expect(oldest.body.shares.map((r: { appId: string }) => r.appId)).toEqual([at("a"), at("d"), at("e"), at("f")]);
    expectError(await server.client.get(`/api/v1/teams/${teamId}/shares?sort=sideways`, { token: owner.token }), 400, "invalid_request");
    expectError(await server.client.get(`/api/v1/teams/${teamId}/shares`, { token: member.token }), 403, "forbidden");
  });

  // Access that changes (links, transfers, removals) and what it leaves behind.
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
