import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startDns, type TestDns } from "./helpers/dns-server.ts";
import { makePro, makePublic, serveAt } from "./helpers/domains.ts";
import { viaHost } from "./helpers/host-request.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const APP = (id: string) => `export const manifest = {
  id: "${id}",
  displayName: "Private ${id}",
  routes: { hello: { access: "read", input: { type: "object" } } },
};
export default { async fetch() { return Response.json({ ok: true, value: "hello" }); } };`;

const HTML = { accept: "text/html" };

/**
 * DECISIONS §12: sign-in is not served on a custom domain and the main host's session cookie is
 * not sent there, so a private app's page on its domain links to the main host, which signs the
 * person in and sends them back with a render token, to that domain and for those who may open
 * the app alone.
 */
describeEachDialect("custom domains: a person signs in on the main host and comes back to a private app's domain", (dialect) => {
  let server: TestServer;
  let dns: TestDns;
  let owner: TestUser;
  let stranger: TestUser;
  let privateId: string;
  let publicId: string;
  let port: string;

  beforeAll(async () => {
    dns = await startDns();
    server = await startServer({ dialect, env: { DNS_RESOLVER: dns.address } });
    port = new URL(server.url).port;
    owner = await createUser(server);
    stranger = await createUser(server);
    await makePro(server, owner.id);
    privateId = (await server.client.post("/app", { module: APP("closed") }, { token: owner.token })).body.id;
    publicId = (await server.client.post("/app", { module: APP("open") }, { token: owner.token })).body.id;
    await makePublic(server, owner.token, publicId);
    await serveAt(server, dns, owner.token, privateId, "closed.example.test");
    await serveAt(server, dns, owner.token, publicId, "open.example.test");
  });
  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  /** The state a domain's sign-in page left in the browser's cookie. */
  const stateOf = (page: { headers: Record<string, string | string[] | undefined> }) =>
    /^svc_open_state=([^;]*)/.exec(([] as string[]).concat(page.headers["set-cookie"] ?? []).find((c) => c.startsWith("svc_open_state=")) ?? "")?.[1] ?? "";
  const handOff = (appId: string, host: string, cookie = "") =>
    server.client.get(`/app/${appId}/open-on-domain?host=${encodeURIComponent(host)}`, { headers: HTML, ...(cookie === "" ? {} : { cookie }) });

  it("the domain's page links to the main host instead of a sign-in form it cannot serve", async () => {
    const page = await viaHost(server.url, "closed.example.test", "/", { headers: HTML });
    expect(page.status).toBe(401);
    expect(page.body).not.toContain('action="/sign-in"');
    const link = /href="([^"]+open-on-domain[^"]+)"/.exec(page.body)?.[1]?.replaceAll("&amp;", "&");
    // With the state the page left in this browser's cookie of the domain: the token coming back is kept only here.
    const state = stateOf(page);
    expect(state).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(link).toBe(`${server.url}/app/${privateId}/open-on-domain?host=closed.example.test&state=${state}`);
    // Nothing else of the control plane is reachable there, the new path included.
    const there = await viaHost(server.url, "closed.example.test", `/app/${privateId}/open-on-domain?host=closed.example.test`, { headers: HTML });
    expect(there.status).toBe(404);
  });

  it("signed out, it sends the person to sign in and back; signed in, to the domain with a token the page takes", async () => {
    const out = await handOff(privateId, `closed.example.test:${port}`);
    expect(out.status).toBe(303);
    const signIn = new URL(out.headers.get("location") ?? "", server.url);
    expect(signIn.pathname).toBe("/sign-in");
    expect(signIn.searchParams.get("return_to")).toBe(`/app/${privateId}/open-on-domain?host=closed.example.test`);

    // Signed in: a page the browser leaves at once for the domain (a redirect there would be the
    // sign-in form's, which its form-action stops), with the token in the address.
    const refused = await viaHost(server.url, "closed.example.test", "/", { headers: HTML });
    const state = stateOf(refused);
    const withState = await server.client.get(`/app/${privateId}/open-on-domain?host=closed.example.test&state=${state}`, { headers: HTML });
    expect(new URL(withState.headers.get("location") ?? "", server.url).searchParams.get("return_to")).toBe(`/app/${privateId}/open-on-domain?host=closed.example.test&state=${state}`);
    const back = await server.client.get(`/app/${privateId}/open-on-domain?host=Closed.Example.Test.&state=${state}`, { headers: HTML, cookie: owner.cookie });
    expect(back.status).toBe(200);
    const refresh = /<meta http-equiv="refresh" content="0; url=([^"]+)">/.exec(back.text)?.[1]?.replaceAll("&amp;", "&") ?? "";
    expect(back.text).toContain(`href="${refresh.replaceAll("&", "&amp;")}"`);
    const target = new URL(refresh);
    expect([target.protocol, target.host, target.pathname]).toEqual(["http:", `closed.example.test:${port}`, "/"]);
    const token = target.searchParams.get("t") ?? "";
    expect(token).toMatch(/^svc_render_/);
    expect(target.searchParams.get("state")).toBe(state);

    // Without the browser's state (anyone's link), the token is not kept: it had planted the
    // link's maker as whoever uses that browser on the domain, for a day.
    const planted = await viaHost(server.url, "closed.example.test", `/?t=${encodeURIComponent(token)}&state=${state}`, { headers: HTML });
    expect(planted.status).toBe(200);
    expect(([] as string[]).concat(planted.headers["set-cookie"] ?? []).some((c) => c.startsWith("svc_app_token="))).toBe(false);

    // On the domain the token leaves the address for a cookie of that host alone, and the page
    // answers at its own address from then on.
    const landing = await viaHost(server.url, "closed.example.test", `/?t=${encodeURIComponent(token)}&state=${state}`, { headers: { ...HTML, cookie: `svc_open_state=${state}` } });
    expect([landing.status, landing.headers.location]).toEqual([303, "/"]);
    const set = ([] as string[]).concat(landing.headers["set-cookie"] ?? []).find((c) => c.startsWith("svc_app_token=")) ?? "";
    expect(set.split(";")[0]).toBe(`svc_app_token=${token}`);
    expect(set).toMatch(/; HttpOnly/);
    expect(set).toMatch(/; SameSite=Lax/);
    expect(set).not.toMatch(/Domain=/i);
    const page = await viaHost(server.url, "closed.example.test", "/", { headers: { ...HTML, cookie: set.split(";")[0] ?? "" } });
    expect(page.status).toBe(200);
    const frame = /src="([^"]+\/frame\?[^"]+)"/.exec(page.body)?.[1]?.replaceAll("&amp;", "&") ?? "";
    expect(new URL(frame).host).toBe("closed.example.test");
    expect(back.headers.get("cache-control")).toBe("no-store");
    // The token acts for the owner: the op answers on the domain as on the main host.
    const hello = await viaHost(server.url, "closed.example.test", `/app/${privateId}/api/hello`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${token}` } });
    expect([hello.status, JSON.parse(hello.body).value]).toEqual([200, "hello"]);
  });

  it("refuses a person who may not open the app, a host the app is not served at, and an app that is not there", async () => {
    const refusals = [
      await handOff(privateId, "closed.example.test", stranger.cookie),
      await handOff(privateId, "open.example.test", owner.cookie),
      await handOff(privateId, "evil.example.test", owner.cookie),
      await handOff(privateId, "127.0.0.1", owner.cookie),
      await handOff("nope", "closed.example.test", owner.cookie),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(404);
      expect(res.headers.get("location")).toBeNull();
      expect(res.text).toContain("There is no app here, or it is not shared with you.");
    }
    const empty = await server.client.get(`/app/${privateId}/open-on-domain?host=`, { headers: HTML });
    expect(empty.status).toBe(400);
  });

  it("someone the app is shared with is sent there with a token of their own; a port in the domain's Host is not carried", async () => {
    const bob = await createUser(server);
    expect((await server.client.post(`/api/v1/apps/${privateId}/shares`, { grantee: bob.handle }, { token: owner.token })).status).toBe(201);
    expect((await server.client.post(`/api/v1/apps/${privateId}/shares/accept`, undefined, { token: bob.token })).status).toBe(200);
    const res = await handOff(privateId, "closed.example.test", bob.cookie);
    expect(res.status).toBe(200);
    const token = /url=[^"]*\?t=([^"&]+)/.exec(res.text)?.[1] ?? "";
    const holder = await server.ctx.tokens.authenticate(decodeURIComponent(token));
    expect(holder).toMatchObject({ kind: "render", appId: privateId, userId: bob.id });
    const page = await viaHost(server.url, "closed.example.test:8443", "/", { headers: HTML });
    expect(page.body).toContain(`/app/${privateId}/open-on-domain?host=closed.example.test&amp;state=`);
  });

  it("a render token as the credential is no one: refused, not sent on; a suspended app mints nothing; a failing domain gets no token", async () => {
    const back = await handOff(privateId, "closed.example.test", owner.cookie);
    const token = decodeURIComponent(/url=[^"]*\?t=([^"&]+)/.exec(back.text)?.[1] ?? "");
    const asToken = await server.client.get(`/app/${privateId}/open-on-domain?host=closed.example.test`, { token, headers: HTML });
    expect([asToken.status, asToken.headers.get("location")]).toEqual([404, null]);

    const queryTokens = async () => Number((await server.ctx.db.selectFrom("tokens").select((eb) => eb.fn.countAll<number>().as("n")).where("app_id", "=", privateId).where("user_id", "=", owner.id).executeTakeFirstOrThrow()).n);
    const audit = { actor: { kind: "cli" as const }, ip: null };
    await server.ctx.suspensions.suspendApp(privateId, "test", audit);
    try {
      const before = await queryTokens();
      const suspended = await handOff(privateId, "closed.example.test", owner.cookie);
      expect(suspended.status).toBe(403);
      expect(suspended.text).not.toContain("svc_render_");
      expect(await queryTokens()).toBe(before);
    } finally {
      await server.ctx.suspensions.unsuspendApp(privateId, audit);
    }

    // Its TXT record gone missing: still served, but the name may be someone else's now.
    await server.ctx.db.updateTable("app_domains").set({ state: "failing" }).where("hostname", "=", "closed.example.test").execute();
    await server.ctx.domainHosts.reload();
    try {
      const failing = await handOff(privateId, "closed.example.test", owner.cookie);
      expect(failing.status).toBe(404);
      expect(failing.text).not.toContain("svc_render_");
    } finally {
      await server.ctx.db.updateTable("app_domains").set({ state: "verified" }).where("hostname", "=", "closed.example.test").execute();
      await server.ctx.domainHosts.reload();
    }
  });

  it("a token in the address moves to a cookie only on its own app's domain, and only a person's", async () => {
    const back = await handOff(privateId, "closed.example.test", owner.cookie);
    const token = decodeURIComponent(/url=[^"]*\?t=([^"&]+)/.exec(back.text)?.[1] ?? "");
    // Another app's domain: the token is not that app's, so nothing is kept there.
    const elsewhere = await viaHost(server.url, "open.example.test", `/?t=${encodeURIComponent(token)}`, { headers: HTML });
    expect(([] as string[]).concat(elsewhere.headers["set-cookie"] ?? []).some((c) => c.startsWith("svc_app_token="))).toBe(false);
    // The main host keeps its links as they were.
    const main = await server.client.get(`/app/${privateId}?t=${encodeURIComponent(token)}`, { headers: HTML });
    expect(main.headers.get("set-cookie") ?? "").not.toContain("svc_app_token=");
    // Signed in on the domain (its cookie), a link with someone else's token opens the page as
    // the cookie's person, not the link's.
    const other = await createUser(server);
    expect((await server.client.post(`/api/v1/apps/${privateId}/shares`, { grantee: other.handle }, { token: owner.token })).status).toBe(201);
    expect((await server.client.post(`/api/v1/apps/${privateId}/shares/accept`, undefined, { token: other.token })).status).toBe(200);
    const theirs = (await server.ctx.renderTokens.mintQuery(privateId, other.id)).token;
    const mine = await viaHost(server.url, "closed.example.test", `/?t=${encodeURIComponent(theirs)}`, { headers: { ...HTML, cookie: `svc_app_token=${token}` } });
    expect(mine.status).toBe(200);
    expect(mine.body).toContain(`frame?t=${token}`);
    expect(mine.body).not.toContain(theirs);
    // A cookie holding another app's token opens nothing.
    const wrong = await viaHost(server.url, "open.example.test", "/", { headers: { ...HTML, cookie: `svc_app_token=${token}` } });
    expect(wrong.body).not.toContain(token);
  });

  it("a public app sends anyone to its domain without a token: there they are a visitor", async () => {
    const res = await handOff(publicId, "open.example.test");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`http://open.example.test:${port}/`);
  });
});
