import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { DAY, type ManualClock } from "../src/config/clock.ts";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = (id: string, marker = "v1") => `export const manifest = {
  id: ${JSON.stringify(id)},
  routes: { look: { access: "read", input: { type: "object" } }, bump: { access: "write", input: { type: "object" } } },
};
export default {
  async fetch(request) {
    return Response.json({ ok: true, value: { op: request.headers.get("x-svc-op"), role: request.headers.get("x-svc-role"), marker: ${JSON.stringify(marker)} } });
  },
};
`;

/** Issue 15, first part: shares — invite, accept, the roles they give, revoke, the refusals. */
describeEachDialect("shares", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let bob: FixtureUser;
  let appId: string;
  const api = (path: string) => `/api/v1/apps/${appId}${path}`;

  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());
  beforeEach(async () => {
    owner = await makeUser(server);
    bob = await makeUser(server);
    const created = await server.client.post("/app", { module: source("shared-app") }, { token: owner.token });
    expect(created.status).toBe(201);
    appId = created.body.id;
  });

  const call = (op: string, token: string) => server.client.post(`/app/${appId}/api/${op}`, {}, { token });

  it("invite → accept → the collaborator edits source and runs a write op → revoke → the collaborator is a stranger again", async () => {
    const invited = await server.client.post(api("/shares"), { grantee: bob.handle }, { token: owner.token });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect(invited.body).toMatchObject({ ok: true, status: "pending" });

    // No access before accept: bob is still a stranger to this private app (403, rule 4).
    expectError(await call("bump", bob.token), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/source`, { token: bob.token }), 403, "forbidden");
    const incoming = await server.client.get("/api/v1/shares/incoming", { token: bob.token });
    expect(incoming.body.shares).toEqual([expect.objectContaining({ appId, role: "collaborator", invitedBy: owner.handle, shareId: invited.body.shareId })]);

    expect((await server.client.post(api("/shares/accept"), undefined, { token: bob.token })).body).toEqual({ ok: true });
    expect((await server.client.post(api("/shares/accept"), undefined, { token: bob.token })).body).toEqual({ ok: true, alreadyAccepted: true });
    expect((await server.client.get("/api/v1/shares/incoming", { token: bob.token })).body.shares).toEqual([]);
    // Bob's list shows the app with his role and the UUID-form URL (the canonical one is the owner's).
    const listedForBob = await server.client.get("/app", { token: bob.token });
    expect(listedForBob.body.apps).toEqual([expect.objectContaining({ id: appId, role: "collaborator", url: `${server.config.baseUrl}/app/${appId}` })]);
    expect((await server.client.get(`/app/${appId}`, { token: bob.token })).status).not.toBe(404);

    const ran = await call("bump", bob.token);
    expect(ran.status, JSON.stringify(ran.body)).toBe(200);
    expect(ran.body.value).toMatchObject({ op: "bump", role: "collaborator" });
    expect((await server.client.get(`/app/${appId}/source`, { token: bob.token })).status).toBe(200);
    const edited = await server.client.put(`/app/${appId}`, { module: source("shared-app", "v2") }, { token: bob.token });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect((await call("look", owner.token)).body.value.marker).toBe("v2");

    // Collaborators never share, and never delete.
    expectError(await server.client.post(api("/shares"), { grantee: owner.handle }, { token: bob.token }), 403, "forbidden");
    expectError(await server.client.delete(`/app/${appId}`, { token: bob.token }), 403, "forbidden");
    expectError(await server.client.get(api("/shares"), { token: bob.token }), 403, "forbidden");

    const listed = await server.client.get(api("/shares"), { token: owner.token });
    expect(listed.body.shares).toEqual([expect.objectContaining({ shareId: invited.body.shareId, grantee: bob.handle, role: "collaborator", status: "accepted", expiresAt: null })]);

    const revoked = await server.client.post(api(`/shares/${invited.body.shareId}/revoke`), undefined, { token: owner.token });
    expect(revoked.body).toMatchObject({ ok: true, revoked: true, note: expect.stringContaining("webhooks") });
    expect((await server.client.post(api(`/shares/${invited.body.shareId}/revoke`), undefined, { token: owner.token })).body.revoked).toBe(false);
    expectError(await call("bump", bob.token), 403, "forbidden");
    expectError(await server.client.put(`/app/${appId}`, { module: source("shared-app", "v3") }, { token: bob.token }), 403, "forbidden");
  });

  it("a viewer runs read ops only and never reads source; an end-user runs write ops but never edits", async () => {
    const carol = await makeUser(server);
    for (const [user, role] of [
      [bob, "viewer"],
      [carol, "end-user"],
    ] as const) {
      expect((await server.client.post(api("/shares"), { grantee: user.handle, role }, { token: owner.token })).status).toBe(201);
      expect((await server.client.post(api("/shares/accept"), undefined, { token: user.token })).status).toBe(200);
    }
    expect((await call("look", bob.token)).body.value.role).toBe("viewer");
    expectError(await call("bump", bob.token), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/source`, { token: bob.token }), 403, "forbidden");

    expect((await call("bump", carol.token)).body.value.role).toBe("end-user");
    expectError(await server.client.get(`/app/${appId}/source`, { token: carol.token }), 403, "forbidden");
    expectError(await server.client.put(`/app/${appId}`, { module: source("shared-app", "x") }, { token: carol.token }), 403, "forbidden");
  });

  it("refuses with the spec's kinds: self, owner, unknown grantee, repeats, a bad role, someone else's app", async () => {
    expectError(await server.client.post(api("/shares"), { grantee: owner.handle }, { token: owner.token }), 400, "grantee_is_self");
    expectError(await server.client.post(api("/shares"), { grantee: "nobody-has-this" }, { token: owner.token }), 404, "grantee_not_found");
    expectError(await server.client.post(api("/shares"), { grantee: bob.handle, role: "admin" }, { token: owner.token }), 400, "invalid_request");
    expect((await server.client.post(api("/shares"), { grantee: bob.handle }, { token: owner.token })).status).toBe(201);
    expectError(await server.client.post(api("/shares"), { grantee: bob.handle, role: "viewer" }, { token: owner.token }), 409, "already_invited");
    await server.client.post(api("/shares/accept"), undefined, { token: bob.token });
    expectError(await server.client.post(api("/shares"), { grantee: bob.handle }, { token: owner.token }), 409, "grantee_already_has_access");
    // Only the invitee accepts; a stranger's accept is refused, and so is any non-user credential.
    const carol = await makeUser(server);
    expectError(await server.client.post(api("/shares/accept"), undefined, { token: carol.token }), 403, "forbidden");
    expectError(await server.client.post(api("/shares/accept")), 401, "sign_in_required");
    expectError(await server.client.post(`/api/v1/apps/not-an-id/shares/accept`, undefined, { token: bob.token }), 400, "invalid_id");
    expectError(await server.client.post(api("/shares"), { grantee: carol.handle }, { token: carol.token }), 403, "forbidden");
  });

  it("an invitation by email stays invited (no account can prove the address yet); invitations expire after 14 days and can be sent again", async () => {
    const byEmail = await server.client.post(api("/shares"), { grantee: "Someone@Example.test" }, { token: owner.token });
    expect(byEmail.body).toMatchObject({ ok: true, status: "invited" });
    // Signing up with that address later does not hand the invitation over.
    const squatter = await server.ctx.users.create({ email: "someone@example.test", handle: `sq${Date.now().toString(36)}`, password: "correct horse battery staple" });
    const token = (await server.ctx.tokens.mintUserToken(squatter.id, {})).token;
    expectError(await server.client.post(api("/shares/accept"), undefined, { token }), 403, "forbidden");
    expectError(await call("look", token), 403, "forbidden");

    expect((await server.client.post(api("/shares"), { grantee: bob.handle }, { token: owner.token })).status).toBe(201);
    (server.clock as ManualClock).advance(14 * DAY + 1);
    // User tokens live 7 days: fresh ones for the same people.
    owner = { ...owner, token: (await server.ctx.tokens.mintUserToken(owner.id, {})).token };
    bob = { ...bob, token: (await server.ctx.tokens.mintUserToken(bob.id, {})).token };
    const listed = await server.client.get(api("/shares"), { token: owner.token });
    expect(listed.body.shares.map((s: { status: string }) => s.status)).toEqual(["expired", "expired"]);
    expectError(await server.client.post(api("/shares/accept"), undefined, { token: bob.token }), 403, "forbidden");
    expect((await server.client.post(api("/shares"), { grantee: bob.handle }, { token: owner.token })).body.status).toBe("pending");
    expect((await server.client.post(api("/shares/accept"), undefined, { token: bob.token })).status).toBe(200);
  });

  it("caps invitations at 50 a day per owner (429 invite_cap_reached)", async () => {
    const many = await makeUser(server);
    const created = await server.client.post("/app", { module: source("cap-app") }, { token: many.token });
    for (let i = 0; i < 50; i++) {
      const res = await server.client.post(`/api/v1/apps/${created.body.id}/shares`, { grantee: `person${i}@example.test` }, { token: many.token });
      expect(res.status).toBe(201);
    }
    expectError(await server.client.post(`/api/v1/apps/${created.body.id}/shares`, { grantee: "one-more@example.test" }, { token: many.token }), 429, "invite_cap_reached");
    (server.clock as ManualClock).advance(DAY + 1);
    expect((await server.client.post(`/api/v1/apps/${created.body.id}/shares`, { grantee: "next-day@example.test" }, { token: many.token })).status).toBe(201);
  });

  it("share links: the owner makes one (URL shown once), a signed-in person takes its role, revoking the link takes it back", async () => {
    const made = await server.client.post(api("/share-links"), { role: "viewer" }, { token: owner.token });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const { id: linkId, url } = made.body.link as { id: string; url: string };
    expect(url).toMatch(new RegExp(`^${server.config.baseUrl}/share/svc_share_[0-9A-Za-z]{49}$`));
    const token = url.slice(url.lastIndexOf("/") + 1);
    expect((await server.client.get(api("/share-links"), { token: owner.token })).body.links).toEqual([{ id: linkId, role: "viewer", createdAt: expect.any(String) }]);

    const taken = await server.client.post("/api/v1/share-links/accept", { token }, { token: bob.token });
    expect(taken.body).toEqual({ ok: true, appId, role: "viewer" });
    expect((await call("look", bob.token)).body.value.role).toBe("viewer");
    expectError(await call("bump", bob.token), 403, "forbidden");
    expect((await server.client.get("/app", { token: bob.token })).body.apps).toEqual([expect.objectContaining({ id: appId, role: "viewer" })]);
    // The owner opening their own link stays the owner.
    expect((await server.client.post("/api/v1/share-links/accept", { token }, { token: owner.token })).body.role).toBe("owner");

    // Shared roles never make links; revoking is the owner's and idempotent.
    expectError(await server.client.post(api("/share-links"), { role: "viewer" }, { token: bob.token }), 403, "forbidden");
    expectError(await server.client.post(api("/share-links"), { role: "collaborator" }, { token: owner.token }), 400, "invalid_request");
    expect((await server.client.delete(api(`/share-links/${linkId}`), { token: owner.token })).body).toEqual({ ok: true, revoked: true });
    expect((await server.client.delete(api(`/share-links/${linkId}`), { token: owner.token })).body).toEqual({ ok: true, revoked: false });
    expectError(await call("look", bob.token), 403, "forbidden");
    expectError(await server.client.post("/api/v1/share-links/accept", { token }, { token: bob.token }), 404, "not_found");
    expectError(await server.client.post("/api/v1/share-links/accept", { token: "svc_share_nope" }, { token: bob.token }), 404, "not_found");

    // Each gave or took access (DECISIONS §15): made by the owner, taken by bob (the owner's own
    // open granted nothing), revoked with the one grant it had made; the refused calls left none.
    const rows = await server.ctx.db.selectFrom("audit_log").select(["action", "actor_id", "detail"]).where("target_id", "=", linkId).orderBy("action").execute();
    expect(rows.map((r) => [r.action, r.actor_id, JSON.parse(r.detail)])).toEqual([
      ["share_link.create", owner.id, { app: appId, role: "viewer" }],
      ["share_link.open", bob.id, { app: appId, role: "viewer" }],
      ["share_link.revoke", owner.id, { app: appId, grants: 1 }],
    ]);
  });

  it("share links: at most 10 live per app (429 link_cap_reached); a link never narrows a wider grant", async () => {
    for (let i = 0; i < 10; i++) expect((await server.client.post(api("/share-links"), { role: "end-user" }, { token: owner.token })).status).toBe(201);
    expectError(await server.client.post(api("/share-links"), { role: "end-user" }, { token: owner.token }), 429, "link_cap_reached");
    const links = (await server.client.get(api("/share-links"), { token: owner.token })).body.links as { id: string }[];
    await server.client.delete(api(`/share-links/${links[0]?.id ?? ""}`), { token: owner.token });
    const viewerLink = (await server.client.post(api("/share-links"), { role: "viewer" }, { token: owner.token })).body.link.url as string;

    await server.client.post(api("/shares"), { grantee: bob.handle, role: "collaborator" }, { token: owner.token });
    await server.client.post(api("/shares/accept"), undefined, { token: bob.token });
    const taken = await server.client.post("/api/v1/share-links/accept", { token: viewerLink.slice(viewerLink.lastIndexOf("/") + 1) }, { token: bob.token });
    expect(taken.body.role).toBe("collaborator");
    expect((await call("bump", bob.token)).body.value.role).toBe("collaborator");
  });

  it("share links in the browser: the page asks before granting, and only our own form's POST grants", async () => {
    const url = (await server.client.post(api("/share-links"), { role: "end-user" }, { token: owner.token })).body.link.url as string;
    const path = new URL(url).pathname;
    const anonymous = await server.client.get(path, { headers: { accept: "text/html" } });
    expect(anonymous.status).toBe(200);
    expect(anonymous.text).toContain('action="/sign-in"');
    const page = await server.client.get(path, { cookie: bob.cookie, headers: { accept: "text/html" } });
    expect(page.text).toContain("shared-app");
    expect(page.text).toContain(`action="${path}"`);
    // Looking is not taking.
    expectError(await call("bump", bob.token), 403, "forbidden");
    const forged = await server.client.request("POST", path, undefined, { cookie: bob.cookie, raw: "", headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example" } });
    expect(forged.status).toBe(403);
    expectError(await call("bump", bob.token), 403, "forbidden");
    const taken = await server.client.request("POST", path, undefined, { cookie: bob.cookie, raw: "", headers: { "content-type": "application/x-www-form-urlencoded", origin: server.config.baseUrl } });
    expect(taken.status).toBe(303);
    expect(taken.headers.get("location")).toBe(`${server.config.baseUrl}/app/${appId}`);
    expect((await call("bump", bob.token)).body.value.role).toBe("end-user");
  });

  it("the invitation page: mailed to the invitee, shows only their own invitation, accepts only by our own form", async () => {
    await server.client.post(api("/shares"), { grantee: bob.handle, role: "end-user" }, { token: owner.token });
    const [bobUser] = [await server.ctx.users.byId(bob.id)];
    const [mail] = await server.ctx.mailer.to(bobUser?.email ?? "");
    expect(mail?.text).toContain(`/invitations/${appId}`);
    expect(mail?.text).toContain("as end-user");
    const path = `/invitations/${appId}`;
    const html = { accept: "text/html" };
    expect((await server.client.get(path, { headers: html })).text).toContain('action="/sign-in"');
    const page = await server.client.get(path, { cookie: bob.cookie, headers: html });
    expect(page.text).toContain(`action="${path}"`);
    const carol = await makeUser(server);
    expect((await server.client.get(path, { cookie: carol.cookie, headers: html })).status).toBe(404);
    expect((await server.client.get("/invitations/not-an-id", { cookie: bob.cookie, headers: html })).status).toBe(400);
    const form = { "content-type": "application/x-www-form-urlencoded" };
    expect((await server.client.request("POST", path, undefined, { cookie: bob.cookie, raw: "", headers: { ...form, origin: "https://evil.example" } })).status).toBe(403);
    expectError(await call("bump", bob.token), 403, "forbidden");
    const accepted = await server.client.request("POST", path, undefined, { cookie: bob.cookie, raw: "", headers: { ...form, origin: server.config.baseUrl } });
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get("location")).toBe(`${server.config.baseUrl}/app/${appId}`);
    expect((await call("bump", bob.token)).body.value.role).toBe("end-user");
    // Accepted already: the page goes straight to the app.
    expect((await server.client.get(path, { cookie: bob.cookie, headers: html })).status).toBe(303);
  });
});
