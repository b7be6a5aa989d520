import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { startDns, type TestDns } from "./helpers/dns-server.ts";
import { makePro, makePublic } from "./helpers/domains.ts";
import { viaHost } from "./helpers/host-request.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const reachable = inject("pgAdminUrl") !== null;

const MODULE = `export const manifest = { id: "spread", displayName: "Spread", routes: { hi: { access: "read", input: { type: "object" } } } };
export default { async fetch() { return Response.json({ ok: true, value: "hi" }); } };`;

/** Polls B until `accept` holds for what it serves at `/` on the domain: 100 tries, 20 ms apart (the reload is one NOTIFY away). */
async function servedOnB(b: TestServer, appId: string, accept: (served: boolean) => boolean): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < 100; i++) {
    const page = await viaHost(b.url, "spread.example.test", "/");
    if (accept(page.body.includes(`/app/${appId}/frame`))) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("B never changed what it serves at the domain");
}

// DECISIONS §12: each instance keeps served hostnames in memory; a change through one reaches
// every other through NOTIFY at once, not at the next minute's reload.
(reachable ? describe : describe.skip)(`custom domains across two instances on one PostgreSQL${reachable ? "" : " — SKIPPED: PostgreSQL unreachable"}`, () => {
  let a: TestServer;
  let b: TestServer;
  let dns: TestDns;
  let owner: TestUser;
  let appId: string;

  beforeAll(async () => {
    dns = await startDns();
    a = await startServer({ dialect: "postgres", env: { DNS_RESOLVER: dns.address } });
    const databaseUrl = a.config.databaseUrl;
    if (databaseUrl === null) throw new Error("instance A has no PostgreSQL URL");
    b = await startServer({ env: { DATABASE_URL: databaseUrl, DNS_RESOLVER: dns.address } });
    owner = await createUser(a);
    await makePro(a, owner.id);
    appId = (await a.client.post("/app", { module: MODULE }, { token: owner.token })).body.id;
    await makePublic(a, owner.token, appId);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await dns?.close();
  });

  it("verified through A, B serves the domain within a second; removed through A, B stops", async () => {
    expect(await servedOnB(b, appId, (served) => !served)).toBeLessThan(1000);
    const added = await a.client.post(`/api/v1/apps/${appId}/domains`, { hostname: "spread.example.test" }, { token: owner.token });
    dns.setTxt("_svc-verify.spread.example.test", [added.body.domain.verification.value]);
    expect((await a.client.post(`/api/v1/apps/${appId}/domains/${added.body.domain.id}/verify`, {}, { token: owner.token })).body.domain.state).toBe("verified");
    expect(await servedOnB(b, appId, (served) => served)).toBeLessThan(1000);
    expect((await a.client.delete(`/api/v1/apps/${appId}/domains/${added.body.domain.id}`, { token: owner.token })).status).toBe(200);
    expect(await servedOnB(b, appId, (served) => !served)).toBeLessThan(1000);
  });

  it("an app deleted through A stops being served at its domain on both at once, not at the next minute's reload", async () => {
    const doomed = (await a.client.post("/app", { module: MODULE.replace('"spread"', '"doomed"') }, { token: owner.token })).body.id as string;
    const added = await a.client.post(`/api/v1/apps/${doomed}/domains`, { hostname: "doomed.example.test" }, { token: owner.token });
    dns.setTxt("_svc-verify.doomed.example.test", [added.body.domain.verification.value]);
    expect((await a.client.post(`/api/v1/apps/${doomed}/domains/${added.body.domain.id}/verify`, {}, { token: owner.token })).body.domain.state).toBe("verified");
    await until(() => b.ctx.domainHosts.appAt("doomed.example.test") === doomed);
    expect((await a.client.delete(`/app/${doomed}`, { token: owner.token })).status).toBe(200);
    await until(() => a.ctx.domainHosts.appAt("doomed.example.test") === null && b.ctx.domainHosts.appAt("doomed.example.test") === null);
  });
});

/** Polls `holds` every 20 ms, up to a second (one NOTIFY away; the backstop reload is a minute). */
async function until(holds: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !holds(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(holds()).toBe(true);
}
