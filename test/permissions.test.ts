import { afterAll, beforeAll, expect, it } from "vitest";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import type { ApiResponse } from "./helpers/client.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { verifiedUser } from "./helpers/mail.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const source = (marker: string, id = "matrix-app") => `export const manifest = {
  id: ${JSON.stringify(id)},
  routes: { look: { access: "read", input: { type: "object" } }, bump: { access: "write", input: { type: "object" } } },
};
export default { async fetch() { return Response.json({ ok: true, value: ${JSON.stringify(marker)} }); } };
`;

type Who = "owner" | "team-member" | "team-admin" | "collaborator" | "end-user" | "viewer" | "viewer-render" | "invitee" | "stranger" | "other-app" | "nobody";
// Destructive rows run left to right with the owner last, so the team's admin comes after its member.
const WHO: Who[] = ["owner", "team-member", "team-admin", "collaborator", "end-user", "viewer", "viewer-render", "invitee", "stranger", "other-app", "nobody"];
const TEAM: ReadonlySet<Who> = new Set(["team-admin", "team-member"]);

/** What a cell expects: a status, and for refusals the error kind. */
type Cell = 200 | 201 | [number, string];
const FORBIDDEN: Cell = [403, "forbidden"];
const SIGN_IN: Cell = [401, "sign_in_required"];
const NO_TOKEN: Cell = [401, "unauthorized"];
const TEMPLATE_EDIT: Cell = [403, "forbidden_template_edit"];

/**
 * Who may do what to a private claimed app, by route family: the documentation of the access
 * model as it stands (issue 15). Columns: the owner; an admin and a member of the team that owns
 * a team app (their cells are asked of an app in that team, made the same way); people it is shared with, per role, after
 * accepting, and the render token the viewer's browser holds after opening the app's page;
 * someone invited who has not accepted; a signed-in stranger; the app token of another
 * (unclaimed) app; no credential at all.
 * An app that exists answers 403 `forbidden` to anyone it does not let in (spec Authentication
 * rule 4); only an unknown id is 404.
 */
const MATRIX: { family: string; send: (c: Ctx, token: string | undefined, who: Who) => Promise<ApiResponse>; expect: Record<Who, Cell> }[] = [
  {
    family: "describe",
    send: (c, t) => c.server.client.get(`/app/${c.appId}/describe`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": 200, viewer: 200, "viewer-render": 200, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: FORBIDDEN },
  },
  {
    family: "source: read",
    send: (c, t) => c.server.client.get(`/app/${c.appId}/source`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: FORBIDDEN },
  },
  {
    family: "source: write",
    send: (c, t) => c.server.client.put(`/app/${c.appId}`, { module: source("edited") }, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: FORBIDDEN },
  },
  {
    family: "op: read",
    send: (c, t) => c.server.client.post(`/app/${c.appId}/api/look`, {}, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": 200, viewer: 200, "viewer-render": 200, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: NO_TOKEN },
  },
  {
    family: "op: write",
    send: (c, t) => c.server.client.post(`/app/${c.appId}/api/bump`, {}, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": 200, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: NO_TOKEN },
  },
  {
    family: "shares: list",
    send: (c, t) => c.server.client.get(`/api/v1/apps/${c.appId}/shares`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": FORBIDDEN, collaborator: FORBIDDEN, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": NO_TOKEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": NO_TOKEN, nobody: SIGN_IN },
  },
  {
    family: "shares: invite",
    send: (c, t) => c.server.client.post(`/api/v1/apps/${c.appId}/shares`, { grantee: `x${Math.random().toString(36).slice(2, 10)}@example.test` }, opts(t)),
    expect: { owner: 201, "team-admin": 201, "team-member": FORBIDDEN, collaborator: FORBIDDEN, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": NO_TOKEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": NO_TOKEN, nobody: SIGN_IN },
  },
  {
    family: "routines: create",
    // One routine (and one webhook) per op: the owner's goes on the other op than the collaborator's.
    send: (c, t, who) => c.server.client.post(`/api/v1/apps/${c.appId}/routines`, { op: who === "owner" || who === "team-admin" ? "look" : "bump", interval: "daily" }, opts(t)),
    expect: { owner: 201, "team-admin": 201, "team-member": 201, collaborator: 201, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": NO_TOKEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": NO_TOKEN, nobody: SIGN_IN },
  },
  {
    family: "webhooks: create",
    send: (c, t, who) => c.server.client.post(`/api/v1/apps/${c.appId}/webhooks`, { op: who === "owner" || who === "team-admin" ? "look" : "bump" }, opts(t)),
    expect: { owner: 201, "team-admin": 201, "team-member": 201, collaborator: 201, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": NO_TOKEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": NO_TOKEN, nobody: SIGN_IN },
  },
  {
    family: "secrets: list (owner only, spec rule 1)",
    send: (c, t) => c.server.client.get(`/app/${c.appId}/secrets`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": FORBIDDEN, collaborator: FORBIDDEN, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: SIGN_IN },
  },
  {
    family: "diag (owner only, spec rule 1)",
    send: (c, t) => c.server.client.get(`/app/${c.appId}/diag`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": FORBIDDEN, collaborator: FORBIDDEN, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: NO_TOKEN },
  },
  {
    family: "logs (source:read, DECISIONS §18)",
    send: (c, t) => c.server.client.get(`/app/${c.appId}/logs`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: NO_TOKEN },
  },
  {
    family: "activity (owner only, spec rule 1)",
    send: (c, t) => c.server.client.get(`/app/${c.appId}/activity`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": FORBIDDEN, collaborator: FORBIDDEN, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: NO_TOKEN },
  },
  {
    family: "assets: list",
    send: (c, t) => c.server.client.get(`/app/${c.appId}/assets`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": 200, viewer: 200, "viewer-render": 200, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: NO_TOKEN },
  },
  {
    family: "assets: upload",
    send: (c, t, who) => uploadAsset(c, t, `${who}.png`),
    expect: { owner: 201, "team-admin": 201, "team-member": 201, collaborator: 201, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: NO_TOKEN },
  },
  {
    family: "versions: list",
    send: (c, t) => c.server.client.get(`/app/${c.appId}/versions`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: FORBIDDEN },
  },
  {
    family: "snapshots: create",
    send: (c, t) => c.server.client.post(`/app/${c.appId}/snapshots`, undefined, opts(t)),
    expect: { owner: 201, "team-admin": 201, "team-member": 201, collaborator: 201, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: FORBIDDEN },
  },
  {
    family: "template listing (app:template-edit)",
    send: (c, t) => c.server.client.patch(`/api/v1/apps/${c.appId}/template-listing`, { title: "Matrix" }, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": TEMPLATE_EDIT, collaborator: TEMPLATE_EDIT, "end-user": TEMPLATE_EDIT, viewer: TEMPLATE_EDIT, "viewer-render": NO_TOKEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": NO_TOKEN, nobody: SIGN_IN },
  },
  {
    family: "copy (needs a user credential and the source's code)",
    send: (c, t, who) => c.server.client.post(`/app/${c.appId}/copy`, { manifest_id: `copy-${who}` }, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": NO_TOKEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": NO_TOKEN, nobody: SIGN_IN },
  },
  {
    family: "copy with data (needs write access)",
    send: (c, t, who) => c.server.client.post(`/app/${c.appId}/copy`, { manifest_id: `data-${who}`, include_data: true }, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": 200, collaborator: 200, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": NO_TOKEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": NO_TOKEN, nobody: SIGN_IN },
  },
  {
    family: "delete",
    send: (c, t) => c.server.client.delete(`/app/${c.otherAppId}`, opts(t)),
    expect: { owner: 200, "team-admin": 200, "team-member": FORBIDDEN, collaborator: FORBIDDEN, "end-user": FORBIDDEN, viewer: FORBIDDEN, "viewer-render": FORBIDDEN, invitee: FORBIDDEN, stranger: FORBIDDEN, "other-app": FORBIDDEN, nobody: FORBIDDEN },
  },
];

interface Ctx {
  server: TestServer;
  appId: string;
  /** A second app shared the same way, for the destructive cells. */
  otherAppId: string;
}

/** A multipart upload, as a page or an agent sends one. */
async function uploadAsset(c: Ctx, token: string | undefined, key: string): Promise<ApiResponse> {
  const form = new FormData();
  form.set("key", key);
  form.set("file", new Blob([new Uint8Array(64).fill(7)], { type: "image/png" }), "x.png");
  const res = await fetch(`${c.server.url}/app/${c.appId}/assets`, { method: "POST", body: form, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === "" ? null : (JSON.parse(text) as unknown), text };
}

/** A team whose owner is `admin`, with `member` joined by invitation, owning two apps like the personal pair. */
async function setUpTeam(server: TestServer, admin: FixtureUser, member: FixtureUser & { email: string }, into: Ctx): Promise<void> {
  await server.ctx.users.setPlan(admin.handle, "pro");
  const team = await server.client.post("/api/v1/teams", { slug: `team-${admin.handle}` }, { token: admin.token });
  const invited = await server.client.post(`/api/v1/teams/${team.body.team.id}/invitations`, { email: member.email }, { token: admin.token });
  const accepted = await server.client.post(`/api/v1/team-invitations/${invited.body.invitation.id}/accept`, undefined, { cookie: member.cookie, headers: { origin: server.config.baseUrl } });
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  for (const key of ["appId", "otherAppId"] as const) {
    const created = await server.client.post("/app", { module: source("v1", key === "appId" ? "matrix-app" : "matrix-other") }, { token: admin.token });
    expect((await server.client.post(`/api/v1/apps/${created.body.id}/transfer`, { team: team.body.team.slug }, { token: admin.token })).status).toBe(200);
    into[key] = created.body.id;
  }
}

function opts(token: string | undefined) {
  return token === undefined ? {} : { token };
}

describeEachDialect("permissions: who may do what to a private app", (dialect) => {
  let server: TestServer;
  const users = {} as Record<Exclude<Who, "nobody" | "other-app" | "viewer-render">, FixtureUser>;
  let otherAppToken = "";
  const renderTokens: Record<string, string> = {};
  const ctx = {} as Ctx;
  /** The same two apps, owned by a team: what the team-admin and team-member columns are asked of. */
  const teamCtx = {} as Ctx;

  beforeAll(async () => {
    server = await startServer({ dialect });
    ctx.server = server;
    for (const who of WHO) if (who !== "nobody" && who !== "other-app" && who !== "viewer-render" && who !== "team-member") users[who] = await makeUser(server);
    const member = await verifiedUser(server);
    users["team-member"] = member;
    teamCtx.server = server;
    await setUpTeam(server, users["team-admin"], member, teamCtx);
    otherAppToken = (await server.client.post("/app", { module: source("v1", "someone-elses") })).body.token as string;
    for (const key of ["appId", "otherAppId"] as const) {
      const created = await server.client.post("/app", { module: source("v1", key === "appId" ? "matrix-app" : "matrix-other") }, { token: users.owner.token });
      expect(created.status).toBe(201);
      ctx[key] = created.body.id;
      for (const role of ["collaborator", "end-user", "viewer"] as const) {
        await server.client.post(`/api/v1/apps/${ctx[key]}/shares`, { grantee: users[role].handle, role }, { token: users.owner.token });
        expect((await server.client.post(`/api/v1/apps/${ctx[key]}/shares/accept`, undefined, { token: users[role].token })).status).toBe(200);
      }
      await server.client.post(`/api/v1/apps/${ctx[key]}/shares`, { grantee: users.invitee.handle }, { token: users.owner.token });
      // What the viewer's browser holds once the app's page is open: a render token for this app.
      const page = `/@${users.owner.handle}/${key === "appId" ? "matrix-app" : "matrix-other"}`;
      renderTokens[key] = await openFrame(server, ctx[key], await openShell(server, page, users.viewer.cookie));
    }
  });
  afterAll(async () => server.close());

  for (const row of MATRIX) {
    it(row.family, async () => {
      const got: Record<string, unknown> = {};
      const want: Record<string, unknown> = {};
      // The owner last on destructive rows: the others must meet the app still there.
      for (const who of [...WHO.filter((w) => w !== "owner"), "owner" as const]) {
        const token =
          who === "nobody" ? undefined : who === "other-app" ? otherAppToken : who === "viewer-render" ? (renderTokens[row.family === "delete" ? "otherAppId" : "appId"] ?? "") : users[who].token;
        const res = await row.send(TEAM.has(who) ? teamCtx : ctx, token, who);
        const cell = row.expect[who];
        want[who] = Array.isArray(cell) ? `${cell[0]} ${cell[1]}` : String(cell);
        got[who] = res.status < 300 ? String(res.status) : `${res.status} ${String(res.body?.error?.kind)}`;
      }
      expect(got).toEqual(want);
    });
  }
});
