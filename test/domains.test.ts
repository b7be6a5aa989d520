import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config/config.ts";
import { HOUR, type ManualClock } from "../src/config/clock.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startDns, type TestDns } from "./helpers/dns-server.ts";
import { makePro, makePublic } from "./helpers/domains.ts";
import { counterModule } from "./fixtures/counter-app.ts";
import { viaHost } from "./helpers/host-request.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const COUNTER = counterModule("todo", "Todo");

describeEachDialect("custom domains (DECISIONS §12)", (dialect) => {
  let server: TestServer;
  let dns: TestDns;
  let owner: TestUser;
  let appId: string;

  beforeAll(async () => {
    dns = await startDns();
    server = await startServer({ dialect, clock: "manual", env: { DNS_RESOLVER: dns.address } });
    owner = await createUser(server);
    await makePro(server, owner.id);
    const created = await server.client.post("/app", { module: COUNTER }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id;
    // A custom domain is for visitors: the app is public, as a site's would be.
    await makePublic(server, owner.token, appId);
  });
  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  const path = () => `/api/v1/apps/${appId}/domains`;

  it("add → pending with its record → verify before the TXT stays pending → TXT → verified → served; record gone → failing, still served → removed after 72 h", async () => {
    const clock = server.clock as ManualClock;
    const added = await server.client.post(path(), { hostname: "Todo.Example.Test." }, { token: owner.token });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const domain = added.body.domain as { id: string; hostname: string; state: string; verification: { type: string; name: string; value: string }; verifiedAt: string | null };
    expect(domain).toMatchObject({ hostname: "todo.example.test", state: "pending", verification: { type: "TXT", name: "_svc-verify.todo.example.test" }, verifiedAt: null });
    expect(domain.verification.value).toMatch(/^svc-verify=[0-9a-f]{32}$/);
    expect((await server.client.get(`/api/v1/domains/tls-allowed?domain=todo.example.test`)).status).toBe(404);

    const early = await server.client.post(`${path()}/${domain.id}/verify`, {}, { token: owner.token });
    expect([early.status, early.body.domain.state]).toEqual([200, "pending"]);
    // Not served yet: that Host is any host, whose / is the service's own front page.
    expect((await viaHost(server.url, "todo.example.test", "/")).body).not.toContain(`/app/${appId}/frame`);

    dns.setTxt("_svc-verify.todo.example.test", ["unrelated", domain.verification.value]);
    const verified = await server.client.post(`${path()}/${domain.id}/verify`, {}, { token: owner.token });
    expect([verified.status, verified.body.domain.state]).toEqual([200, "verified"]);
    expect(verified.body.domain.verifiedAt).toEqual(expect.any(String));
    expect((await server.client.get(`/api/v1/domains/tls-allowed?domain=todo.example.test`)).status).toBe(200);
    await server.ctx.domainHosts.reload();

    // Served: the page at /, the app's op at its path; the control plane is not there.
    const page = await viaHost(server.url, "todo.example.test", "/");
    expect(page.status).toBe(200);
    expect(page.body).toContain(`src="http://todo.example.test/app/${appId}/frame?t=`);
    const op = await viaHost(server.url, "todo.example.test", `/app/${appId}/api/bump`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${owner.token}` } });
    expect([op.status, JSON.parse(op.body)]).toEqual([200, { ok: true, value: 1 }]);
    for (const controlPlane of ["/api/v1/apps", "/mcp", "/account", "/sign-in", "/admin", "/healthz", "/app", `/app/00000000-0000-4000-8000-000000000000`]) {
      expect((await viaHost(server.url, "todo.example.test", controlPlane)).status, controlPlane).toBe(404);
    }

    // The record goes; the 6-hourly re-check finds it missing: failing, still served.
    dns.clear("_svc-verify.todo.example.test");
    clock.advance(6 * HOUR + 1);
    expect(await server.ctx.domains.recheck()).toBe(1);
    const listed = await server.client.get(path(), { token: owner.token });
    expect(listed.body.domains.map((d: { state: string }) => d.state)).toEqual(["failing"]);
    await server.ctx.domainHosts.reload();
    expect((await viaHost(server.url, "todo.example.test", "/")).status).toBe(200);
    expect((await server.client.get(`/api/v1/domains/tls-allowed?domain=TODO.example.test.`)).status).toBe(200);

    // Missing for 72 hours: removed, and no longer served.
    for (let i = 0; i < 12; i++) {
      clock.advance(6 * HOUR + 1);
      await server.ctx.domains.recheck();
    }
    expect((await server.client.get(path(), { token: owner.token })).body.domains).toEqual([]);
    await server.ctx.domainHosts.reload();
    expect((await viaHost(server.url, "todo.example.test", "/")).body).not.toContain(`/app/${appId}/frame`);
    expect((await viaHost(server.url, "todo.example.test", `/app/${appId}/api/bump`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${owner.token}` } })).status).toBe(200);
    expect((await server.client.get(`/api/v1/domains/tls-allowed?domain=todo.example.test`)).status).toBe(404);
  });

  it("refusals: exact status and kind for every bad input, a plan without the feature, a DNS that times out or fails", async () => {
    const add = (hostname: string, token = owner.token) => server.client.post(path(), { hostname }, { token });
    for (const bad of ["localhost", "app.localhost", "127.0.0.1", "1.2.3", "[::1]", "::1", "example", "-bad.example.com", "a..b.com", "x.com:8080", "https://x.com", "a.com#x", "a.com?x", "a.com\\b", "%61.com", "a .com", new URL(server.config.baseUrl).hostname, `sub.${new URL(server.config.baseUrl).hostname}`, "a".repeat(64) + ".com"]) {
      const res = await add(bad);
      expect([res.status, res.body.error?.kind], bad).toEqual([400, "invalid_domain"]);
    }
    // A look-alike in another script is kept in its IDNA form, which is what DNS and TLS see.
    const idn = await add("аpple.example.test");
    expect([idn.status, idn.body.domain?.hostname]).toEqual([201, "xn--pple-43d.example.test"]);
    expect([(await add("XN--PPLE-43D.example.test.")).status, (await add("xn--pple-43d.example.test")).body.error.kind]).toEqual([409, "domain_exists"]);

    // A claim not proved holds nothing: another app may claim the name too, and the first to prove it wins.
    const other = await server.client.post("/app", { module: COUNTER.replace('id: "todo"', 'id: "other"') }, { token: owner.token });
    const rival = await server.client.post(`/api/v1/apps/${other.body.id}/domains`, { hostname: "xn--pple-43d.example.test" }, { token: owner.token });
    expect(rival.status).toBe(201);
    dns.setTxt("_svc-verify.xn--pple-43d.example.test", [idn.body.domain.verification.value]);
    expect((await server.client.post(`${path()}/${idn.body.domain.id}/verify`, {}, { token: owner.token })).body.domain.state).toBe("verified");
    expect((await server.client.get(`/api/v1/apps/${other.body.id}/domains`, { token: owner.token })).body.domains).toEqual([]);
    const taken = await server.client.post(`/api/v1/apps/${other.body.id}/domains`, { hostname: "xn--pple-43d.example.test" }, { token: owner.token });
    expect([taken.status, taken.body.error.kind]).toEqual([409, "domain_taken"]);

    const free = await createUser(server);
    const freeApp = await server.client.post("/app", { module: COUNTER }, { token: free.token });
    const plan = await server.client.post(`/api/v1/apps/${freeApp.body.id}/domains`, { hostname: "free.example.test" }, { token: free.token });
    expect([plan.status, plan.body.error.kind, plan.body.error.feature]).toEqual([403, "plan_required", "custom_domain"]);
    const stranger = await server.client.post(path(), { hostname: "stranger.example.test" }, { token: free.token });
    expect([stranger.status, stranger.body.error.kind]).toEqual([403, "forbidden"]);
    const anonymous = await server.client.post(path(), { hostname: "x.example.test" });
    expect([anonymous.status, anonymous.body.error.kind]).toEqual([401, "sign_in_required"]);

    const pending = await add("slow.example.test");
    dns.silent = true;
    try {
      const slow = await server.client.post(`${path()}/${pending.body.domain.id}/verify`, {}, { token: owner.token });
      expect([slow.status, slow.body.error.kind]).toEqual([503, "domain_provider_unavailable"]);
    } finally {
      dns.silent = false;
    }
    dns.failing = true;
    try {
      const broken = await server.client.post(`${path()}/${pending.body.domain.id}/verify`, {}, { token: owner.token });
      expect([broken.status, broken.body.error.kind]).toEqual([503, "domain_provider_unavailable"]);
    } finally {
      dns.failing = false;
    }
    const gone = await server.client.delete(`${path()}/${pending.body.domain.id}`, { token: owner.token });
    expect(gone.status).toBe(200);
    const again = await server.client.delete(`${path()}/${pending.body.domain.id}`, { token: owner.token });
    expect([again.status, again.body.error.kind]).toEqual([404, "not_found"]);
  });

  it("the console's Domains tab: add, the record to create, verify now, remove; a form from another origin does nothing", async () => {
    const form = (path: string, body: string, origin = server.config.baseUrl) =>
      fetch(`${server.url}${path}`, { method: "POST", headers: { cookie: owner.cookie, origin, "content-type": "application/x-www-form-urlencoded" }, body, redirect: "manual" });
    const tab = () => fetch(`${server.url}/apps/${appId}/domains`, { headers: { cookie: owner.cookie } }).then((res) => res.text());
    expect(await tab()).toContain("Custom domains");
    expect((await form(`/apps/${appId}/domains`, "hostname=forged.example.test", "https://evil.example")).status).toBe(403);
    expect((await form(`/apps/${appId}/domains`, "hostname=console.example.test")).status).toBe(303);
    const listed = (await server.client.get(path(), { token: owner.token })).body.domains.find((d: { hostname: string }) => d.hostname === "console.example.test");
    expect(listed?.state).toBe("pending");
    const page = await tab();
    expect(page).toContain(`_svc-verify.console.example.test TXT "${listed.verification.value}"`);
    expect(page).not.toContain("forged.example.test");
    // A refusal the person can act on is shown on the tab.
    const refused = await form(`/apps/${appId}/domains`, "hostname=app.localhost");
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("localhost cannot be a custom domain");
    dns.setTxt("_svc-verify.console.example.test", [listed.verification.value]);
    expect((await form(`/apps/${appId}/domains/${listed.id}/verify`, "")).status).toBe(303);
    expect(await tab()).toContain('data-state="verified"');
    expect((await form(`/apps/${appId}/domains/${listed.id}/remove`, "")).status).toBe(303);
    expect(await tab()).not.toContain("console.example.test");
  });
});

describe("DNS_RESOLVER", () => {
  it.each(["127.0.0.1:53", "[::1]:5353"])("takes an address and port: %s", (value) => {
    expect(loadConfig({ DNS_RESOLVER: value }).dnsResolver).toBe(value);
  });
  // node:dns takes addresses only (a name would need a resolver of its own): refused at start, not at the first look-up.
  it.each(["dns.example.com:53", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "::1:53", "[dns]:53"])("refuses %s at start", (value) => {
    expect(() => loadConfig({ DNS_RESOLVER: value })).toThrow(ConfigError);
  });
});
