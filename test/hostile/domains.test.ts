import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser, type TestUser } from "../helpers/accounts.ts";
import { startDns, type TestDns } from "../helpers/dns-server.ts";
import { makePro, makePublic, serveAt } from "../helpers/domains.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { viaHost } from "../helpers/host-request.ts";

const NOTE = (id: string) => `export const manifest = {
  id: "${id}",
  displayName: "${id}",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { put: { access: "write", input: { type: "object" } }, get: { access: "read", input: { type: "object" } } },
};
export default { async fetch(request, env) {
  if (request.headers.get("x-svc-op") === "put") await env.KV.set("note", (await request.json()).note);
  return Response.json({ ok: true, value: (await env.KV.get("note")) ?? null });
} };`;

/**
 * DECISIONS §12 under attack: a Host header is whatever the client sends. Naming an app's verified
 * domain reaches that app's own paths and nothing else, never another app's data with its
 * credentials; spellings of a hostname route as one; an unverified one is the main host.
 */
describe("hostile: custom domains and the Host header", () => {
  let server: TestServer;
  let dns: TestDns;
  let attacker: TestUser;
  let victim: TestUser;
  let attackerApp: string;
  let victimApp: string;

  beforeAll(async () => {
    dns = await startDns();
    server = await startServer({ env: { DNS_RESOLVER: dns.address } });
    attacker = await createUser(server);
    victim = await createUser(server);
    for (const user of [attacker, victim]) await makePro(server, user.id);
    attackerApp = (await server.client.post("/app", { module: NOTE("evil") }, { token: attacker.token })).body.id;
    victimApp = (await server.client.post("/app", { module: NOTE("diary") }, { token: victim.token })).body.id;
    await server.client.post(`/app/${victimApp}/api/put`, { note: "the victim's secret" }, { token: victim.token });
    await makePublic(server, attacker.token, attackerApp);
    await makePublic(server, victim.token, victimApp);
    await serveAt(server, dns, attacker.token, attackerApp, "evil.example.test");
    await serveAt(server, dns, victim.token, victimApp, "diary.example.test");
  });
  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  it("the attacker's domain in Host reaches the attacker's app only: the victim's paths, with the victim's own token, are 404", async () => {
    for (const path of [`/app/${victimApp}/api/get`, `/app/${victimApp}/frame`, `/app/${victimApp}/events`, `/app/${victimApp}/assets/x`, `/app/${victimApp}`]) {
      const res = await viaHost(server.url, "evil.example.test", path, { method: path.endsWith("/api/get") ? "POST" : "GET", ...(path.endsWith("/api/get") ? { body: "{}" } : {}), headers: { authorization: `Bearer ${victim.token}` } });
      expect(res.status, path).toBe(404);
      expect(res.body, path).not.toContain("the victim's secret");
    }
    // Nor does the app's own control plane answer on its domain: source, secrets, versions, MCP, logs.
    for (const path of ["source", "secrets", "versions", "mcp", "logs", "describe", "visibility", "copy"]) {
      const res = await viaHost(server.url, "evil.example.test", `/app/${attackerApp}/${path}`, { headers: { authorization: `Bearer ${attacker.token}` } });
      expect(res.status, path).toBe(404);
    }
    const own = await viaHost(server.url, "evil.example.test", `/app/${attackerApp}/api/get`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${attacker.token}` } });
    expect(own.status).toBe(200);
  });

  it("a render token minted on one app's domain is refused by another app on its own domain", async () => {
    const evilPage = await viaHost(server.url, "evil.example.test", "/");
    const token = decodeURIComponent(/frame\?t=([^"&]+)/.exec(evilPage.body)?.[1] ?? "");
    expect(token).toMatch(/^svc_render_/);
    const res = await viaHost(server.url, "diary.example.test", `/app/${victimApp}/api/get`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${token}` } });
    expect([res.status, (JSON.parse(res.body) as { error: { kind: string } }).error.kind]).toEqual([403, "forbidden"]);
    expect(res.body).not.toContain("the victim's secret");
  });

  it("spellings of a served hostname route as one; unverified and unknown hosts are the main host", async () => {
    for (const host of ["DIARY.example.test", "diary.example.test.", "diary.example.test:8443"]) {
      const page = await viaHost(server.url, host, "/");
      expect(page.status, host).toBe(200);
      expect(page.body, host).toContain(`/app/${victimApp}/frame?t=`);
    }
    const pending = await server.client.post(`/api/v1/apps/${attackerApp}/domains`, { hostname: "pending.example.test" }, { token: attacker.token });
    expect(pending.status).toBe(201);
    await server.ctx.domainHosts.reload();
    // A pending domain is not served: the main host answers, whose / is the service's front page.
    const front = await viaHost(server.url, "pending.example.test", "/");
    expect(front.body).not.toContain(`/app/${attackerApp}/frame`);
    // The victim's domain cannot be claimed by the attacker's app.
    const steal = await server.client.post(`/api/v1/apps/${attackerApp}/domains`, { hostname: "Diary.Example.Test." }, { token: attacker.token });
    expect([steal.status, steal.body.error.kind]).toEqual([409, "domain_taken"]);
  });

  it("a cookie-authenticated change from the main origin's pages is refused on a custom domain, and one from the custom domain on the main host", async () => {
    const onDomain = await viaHost(server.url, "diary.example.test", `/app/${victimApp}/report`, { method: "POST", headers: { origin: server.config.baseUrl, "content-type": "application/x-www-form-urlencoded" }, body: "reason=spam" });
    expect(onDomain.status).toBe(403);
    const onMain = await server.client.post(`/api/token`, {}, { cookie: victim.cookie, headers: { origin: "http://diary.example.test" } });
    expect([onMain.status, onMain.body.error.kind]).toEqual([403, "forbidden"]);
  });

  it("the way onto a domain never hands a signed-in victim's render token to a host other than the app's own", async () => {
    const tokensOf = async () => Number((await server.ctx.db.selectFrom("tokens").select((eb) => eb.fn.countAll<number>().as("n")).where("user_id", "=", victim.id).where("app_id", "=", victimApp).where("kind", "=", "render").executeTakeFirstOrThrow()).n);
    const before = await tokensOf();
    // The attacker's link, followed by the victim in their browser (their session cookie rides along).
    for (const host of ["evil.example.test", "evil.example.test:80", "diary.example.test.evil.example.test", "diary.example.test@evil.example.test", "evil.example.test/diary.example.test", "127.0.0.1", "[::1]"]) {
      const res = await server.client.get(`/app/${victimApp}/open-on-domain?host=${encodeURIComponent(host)}`, { cookie: victim.cookie, headers: { accept: "text/html" } });
      expect(res.status, host).toBe(404);
      expect(res.headers.get("location"), host).toBeNull();
      expect(res.text, host).not.toContain("svc_render_");
    }
    expect(await tokensOf()).toBe(before);
    // Their own app's domain, with their cookie: the token goes to that domain alone.
    const own = await server.client.get(`/app/${victimApp}/open-on-domain?host=diary.example.test`, { cookie: victim.cookie, headers: { accept: "text/html" } });
    expect(own.status).toBe(200);
    expect(own.text).toContain(`url=http://diary.example.test:${new URL(server.url).port}/?t=svc_render_`);
    expect(await tokensOf()).toBe(before + 1);
  });
});
