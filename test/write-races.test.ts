/**
 * Checks that two writers could both pass, each read before its transaction or counted at
 * PostgreSQL's default isolation, where a count takes no lock: a cap, one cover, a link being
 * revoked, a secret's app being deleted or moved. Each write now holds a parent row (store
 * row-lock.ts). Two instances on one PostgreSQL database race for real: one instance serialises
 * a person's writes in their fair-share lane, two do not.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { createTestDatabase, describeEachDialect } from "./helpers/dialects.ts";
import { PNG, uploadMedia } from "./helpers/templates.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = (id: string) => `export const manifest = { id: ${JSON.stringify(id)}, routes: { which: { access: "read" } } };
export default { async fetch(request, env) { return Response.json({ ok: true, value: env.API_KEY ?? null }); } };
`;
const APP = `export const manifest = { id: "linked", routes: { look: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "private stuff" }); } };`;
const reachable = inject("pgAdminUrl") !== null;
/** Lets `turns` macrotasks pass, so the two requests of a round start a little apart, by a different amount each round. */
async function stagger(turns: number): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

describeEachDialect("write races: a share link revoked while it is opened", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  it("a link revoked between its lookup and its grant grants nothing: the open is refused, and the holder has no role", async () => {
    const owner = await makeUser(server);
    const holder = await makeUser(server);
    const appId = (await server.client.post("/app", { module: APP }, { token: owner.token })).body.id as string;
    const link = await server.client.post(`/api/v1/apps/${appId}/share-links`, { role: "end-user" }, { token: owner.token });
    expect(link.status, JSON.stringify(link.body)).toBe(201);
    const token = (link.body.link.url as string).split("/share/")[1] as string;

    // Deterministic interleaving: the owner's revoke commits right after `open` has found the
    // link (its first step) and before it writes the grant.
    const apps = server.ctx.apps;
    const original = apps.roleOf.bind(apps);
    let raced = false;
    apps.roleOf = async (actor, app) => {
      if (!raced && actor?.kind === "user" && actor.userId === holder.id) {
        raced = true;
        const revoked = await server.client.delete(`/api/v1/apps/${appId}/share-links/${link.body.link.id}`, { token: owner.token });
        expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
      }
      return original(actor, app);
    };
    try {
      expectError(await server.client.post("/api/v1/share-links/accept", { token }, { token: holder.token }), 404, "not_found");
    } finally {
      apps.roleOf = original;
    }
    expect(raced).toBe(true);
    // The link is gone...
    expect((await server.client.get(`/api/v1/apps/${appId}/share-links`, { token: owner.token })).body.links).toEqual([]);
    // ...and so is every grant made through it.
    expectError(await server.client.post(`/app/${appId}/api/look`, {}, { token: holder.token }), 403, "forbidden");
  });
});

(reachable ? describe : describe.skip)(`write races: two instances on one PostgreSQL${reachable ? "" : " — SKIPPED: PostgreSQL unreachable"}`, () => {
  let a: TestServer;
  let b: TestServer;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    const env = { DATABASE_URL: db.url, SECRETS_KEY: randomBytes(32).toString("base64") };
    a = await startServer({ env });
    b = await startServer({ env });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await drop?.();
  });

  async function newApp(owner: FixtureUser, id: string): Promise<string> {
    const res = await a.client.post("/app", { module: source(id) }, { token: owner.token });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id;
  }

  it("template media: two concurrent covers leave one cover", async () => {
    const owner = await makeUser(a);
    const appId = await newApp(owner, "cover-race");
    for (let round = 0; round < 10; round++) {
      const results = await Promise.all([a, b].map((s, i) => uploadMedia(s, appId, owner.token, { kind: "cover", alt: `c${i}` }, { data: PNG, type: "image/png", name: `c${i}.png` })));
      expect(results.map((r) => r.status)).toEqual([201, 201]);
      const media = await a.ctx.store.db.selectFrom("template_media").selectAll().where("app_id", "=", appId).execute();
      expect(media.filter((m) => m.kind === "cover"), `round ${round}`).toHaveLength(1);
    }
  });

  it("template media: the 8-screenshot gallery cap holds against concurrent uploads", async () => {
    const owner = await makeUser(a);
    for (let round = 0; round < 8; round++) {
      const appId = await newApp(owner, `gallery-race-${round}`);
      for (let i = 0; i < 7; i++) expect((await uploadMedia(a, appId, owner.token, { kind: "screenshot", alt: `s${i}` }, { data: PNG, type: "image/png", name: "s.png" })).status).toBe(201);
      await Promise.all([a, b].map((s, i) => uploadMedia(s, appId, owner.token, { kind: "screenshot", alt: `x${i}` }, { data: PNG, type: "image/png", name: "x.png" })));
      const shots = (await a.ctx.store.db.selectFrom("template_media").selectAll().where("app_id", "=", appId).execute()).filter((m) => m.kind === "screenshot");
      expect(shots.length, `round ${round}`).toBeLessThanOrEqual(8);
    }
  });

  it("custom domains: the 10-per-app cap holds against concurrent adds", async () => {
    const owner = await makeUser(a, "pro");
    const appId = await newApp(owner, "domain-race");
    for (let i = 0; i < 9; i++) expect((await a.client.post(`/api/v1/apps/${appId}/domains`, { hostname: `d${i}.example.com` }, { token: owner.token })).status).toBe(201);
    const results = await Promise.all([a, b].map((s, i) => s.client.post(`/api/v1/apps/${appId}/domains`, { hostname: `x${i}.example.com` }, { token: owner.token })));
    const rows = await a.ctx.store.db.selectFrom("app_domains").select("id").where("app_id", "=", appId).execute();
    expect({ statuses: results.map((r) => r.status).sort(), rows: rows.length }).toEqual({ statuses: [201, 400], rows: 10 });
  });

  it("share links: the 10-live-links cap holds against concurrent creates", async () => {
    const owner = await makeUser(a);
    for (let round = 0; round < 4; round++) {
      const appId = await newApp(owner, `links-race-${round}`);
      for (let i = 0; i < 9; i++) expect((await a.client.post(`/api/v1/apps/${appId}/share-links`, { role: "viewer" }, { token: owner.token })).status).toBe(201);
      const results = await Promise.all([a, b].map((s) => s.client.post(`/api/v1/apps/${appId}/share-links`, { role: "viewer" }, { token: owner.token })));
      const rows = await a.ctx.store.db.selectFrom("app_share_links").select("id").where("app_id", "=", appId).execute();
      expect({ round, statuses: results.map((r) => r.status).sort(), rows: rows.length }).toEqual({ round, statuses: [201, 429], rows: 10 });
    }
  });

  it("share invite: two concurrent invites of one person give one share and a clean 409, never a 500", async () => {
    const owner = await makeUser(a);
    const appId = await newApp(owner, "invite-race");
    const seen = new Set<string>();
    for (let round = 0; round < 10; round++) {
      const grantee = await makeUser(a);
      const results = await Promise.all([a, b].map((s) => s.client.post(`/api/v1/apps/${appId}/shares`, { grantee: grantee.handle }, { token: owner.token })));
      for (const r of results) seen.add(`${r.status} ${r.body?.error?.kind ?? "ok"}`);
    }
    expect([...seen].sort()).toEqual(["201 ok", "409 already_invited"]);
  });

  it("share link: one person opening a link twice at once gets the role twice, never a 500", async () => {
    const owner = await makeUser(a);
    const appId = await newApp(owner, "open-race");
    const link = await a.client.post(`/api/v1/apps/${appId}/share-links`, { role: "viewer" }, { token: owner.token });
    const token = new URL(link.body.link.url).pathname.split("/").pop();
    const seen = new Set<string>();
    for (let round = 0; round < 10; round++) {
      const visitor = await makeUser(a);
      const results = await Promise.all([a, b].map((s) => s.client.post(`/api/v1/share-links/accept`, { token }, { token: visitor.token })));
      for (const r of results) seen.add(`${r.status} ${r.body?.error?.kind ?? "ok"}`);
    }
    expect([...seen]).toEqual(["200 ok"]);
  });

  it("team invitations: the 50-a-day cap holds against concurrent invites", async () => {
    const owner = await makeUser(a, "pro");
    const team = await a.client.post("/api/v1/teams", { slug: `t${randomBytes(4).toString("hex")}` }, { token: owner.token });
    expect(team.status, JSON.stringify(team.body)).toBe(201);
    const teamId = team.body.team.id;
    for (let i = 0; i < 49; i++) expect((await a.client.post(`/api/v1/teams/${teamId}/invitations`, { email: `p${i}@example.test` }, { token: owner.token })).status).toBe(201);
    const results = await Promise.all([a, b].map((s, i) => s.client.post(`/api/v1/teams/${teamId}/invitations`, { email: `late${i}@example.test` }, { token: owner.token })));
    const rows = await a.ctx.store.db.selectFrom("team_invitations").select("id").where("team_id", "=", teamId).execute();
    expect({ statuses: results.map((r) => r.status).sort(), rows: rows.length }).toEqual({ statuses: [201, 429], rows: 50 });
  });

  it("share invitations: the 50-a-day per-inviter cap holds against concurrent invites", async () => {
    const owner = await makeUser(a);
    const appId = await newApp(owner, "share-cap-race");
    for (let i = 0; i < 49; i++) expect((await a.client.post(`/api/v1/apps/${appId}/shares`, { grantee: `p${i}@example.test` }, { token: owner.token })).status).toBe(201);
    const results = await Promise.all([a, b].map((s, i) => s.client.post(`/api/v1/apps/${appId}/shares`, { grantee: `late${i}@example.test` }, { token: owner.token })));
    const rows = await a.ctx.store.db.selectFrom("app_shares").select("id").where("invited_by", "=", owner.id).execute();
    expect({ statuses: results.map((r) => r.status).sort(), rows: rows.length }).toEqual({ statuses: [201, 429], rows: 50 });
  });

  it("a secret created while its app is deleted is not inherited by the next app of that manifest id", async () => {
    const owner = await makeUser(a);
    const inherited: string[] = [];
    for (let round = 0; round < 20; round++) {
      const manifestId = `sec-del-${round}`;
      const appId = (await a.client.post("/app", { module: source(manifestId) }, { token: owner.token })).body.id;
      const [created, deleted] = await Promise.all([
        a.client.post(`/app/${appId}/secrets`, { name: "API_KEY", value: `secret-of-deleted-app-${round}` }, { token: owner.token }),
        stagger(round % 5).then(() => b.client.delete(`/app/${appId}`, { token: owner.token })),
      ]);
      expect(deleted.status).toBe(200);
      // A new, unrelated app that happens to reuse the manifest id.
      const next = await a.client.post("/app", { module: source(manifestId) }, { token: owner.token });
      expect(next.status).toBe(201);
      const names = await a.client.get(`/app/${next.body.id}/secrets`, { token: owner.token });
      if (names.body.names.length > 0) inherited.push(`round ${round}: create ${created.status}; the new app ${next.body.id} holds ${JSON.stringify(names.body.names)}`);
    }
    expect(inherited).toEqual([]);
  });

  it("a secret written while its app moves into a team is not lost", async () => {
    const owner = await makeUser(a, "pro");
    const team = await a.client.post("/api/v1/teams", { slug: `t${randomBytes(4).toString("hex")}` }, { token: owner.token });
    expect(team.status, JSON.stringify(team.body)).toBe(201);
    const slug = team.body.team?.slug ?? team.body.slug;
    const lost: string[] = [];
    for (let round = 0; round < 20; round++) {
      const appId = (await a.client.post("/app", { module: source(`sec-move-${round}`) }, { token: owner.token })).body.id;
      const [created, moved] = await Promise.all([
        a.client.post(`/app/${appId}/secrets`, { name: "API_KEY", value: `v${round}` }, { token: owner.token }),
        stagger(round % 5).then(() => b.client.post(`/api/v1/apps/${appId}/transfer`, { team: slug }, { token: owner.token })),
      ]);
      expect(moved.status, JSON.stringify(moved.body)).toBe(200);
      const names = await a.client.get(`/app/${appId}/secrets`, { token: owner.token });
      if (created.status === 201 && !names.body.names.includes("API_KEY")) lost.push(`round ${round}: create answered 201, the app (now the team's) has ${JSON.stringify(names.body.names)}`);
    }
    expect(lost).toEqual([]);
  });
});
