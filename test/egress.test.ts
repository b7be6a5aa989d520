import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { startCanary, startTlsFixture, type Canary, type TlsFixture } from "./helpers/tls-fixture.ts";

const MiB = 1024 * 1024;

describe("egress: outbound fetch from app code", () => {
  let fixture: TlsFixture;
  let canary: Canary;
  let server: TestServer;
  let owner: TestUser;
  let appId: string;
  let api: string;
  let other: string;
  let c: number;
  const extraOrigins: string[] = [];

  beforeAll(async () => {
    canary = await startCanary();
    c = canary.port;
    fixture = await startTlsFixture(["api.fixture.test", "other.fixture.test"], (req, res) => {
      const url = new URL(req.url ?? "/", "https://fixture");
      const to = url.searchParams.get("to");
      if (url.pathname === "/ok") return res.end("hello from the fixture");
      if (url.pathname === "/big") return res.end(Buffer.alloc(6 * MiB, 97));
      if (url.pathname === "/exact") return res.end(Buffer.alloc(5 * MiB, 98));
      if (url.pathname === "/redirect" && to !== null) return res.writeHead(302, { location: to }).end();
      if (url.pathname.startsWith("/chain/")) {
        const left = Number(url.pathname.slice("/chain/".length));
        return left > 0 ? res.writeHead(302, { location: `/chain/${left - 1}` }).end() : res.end("end of chain");
      }
      if (url.pathname === "/see-other") return res.writeHead(303, { location: "/ok" }).end();
      if (url.pathname === "/headers") return res.end(JSON.stringify({ authorization: req.headers.authorization ?? null, cookie: req.headers.cookie ?? null, keep: req.headers["x-keep"] ?? null }));
      if (url.pathname === "/echo") {
        const chunks: Buffer[] = [];
        req.on("data", (chunk: Buffer) => chunks.push(chunk));
        req.on("end", () => res.end(`${req.method} ${Buffer.concat(chunks).toString()}`));
        return;
      }
      res.writeHead(404).end();
    });
    api = `https://api.fixture.test:${fixture.port}`;
    other = `https://other.fixture.test:${fixture.port}`;
    server = await startServer({
      egressTestOverrides: {
        hosts: { [`api.fixture.test:${fixture.port}`]: `127.0.0.1:${fixture.port}`, [`other.fixture.test:${fixture.port}`]: `127.0.0.1:${fixture.port}` },
        caPem: fixture.caPem,
      },
    });
    owner = await createUser(server);
    // Every address form below is declared, so the refusals come from the address checks,
    // not from the origin list.
    for (const row of ADDRESS_FORMS) extraOrigins.push(new URL(row.replace("$C", String(c))).origin);
    const name = hostname();
    const resolved = await lookup(name).catch(() => null);
    if (resolved !== null && /^127\.|^::1$/.test(resolved.address)) extraOrigins.push(`https://${name}:${c}`);
    const origins = [...new Set([api, other, ...extraOrigins])];
    const created = await server.client.post("/app", { module: fetcherModule(origins) }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id;
  });
  afterAll(async () => {
    await server?.close();
    await fixture?.close();
    await canary?.close();
  });

  const get = async (url: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) => {
    const res = await server.client.post(`/app/${appId}/api/get`, { url, ...init }, { token: owner.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.value as { status?: number; size?: number; head?: string; error?: string };
  };

  it("reaches a declared https origin end to end, following redirects and keeping methods right", async () => {
    expect(await get(`${api}/ok`)).toMatchObject({ status: 200, head: "hello from the fixture" });
    expect(await get(`${api}/chain/5`)).toMatchObject({ status: 200, head: "end of chain" });
    expect(await get(`${api}/redirect?to=${encodeURIComponent(`${other}/ok`)}`)).toMatchObject({ status: 200 });
    expect(await get(`${api}/echo`, { method: "POST", body: "payload" })).toMatchObject({ head: "POST payload" });
    expect(await get(`${api}/see-other`, { method: "POST", body: "x" })).toMatchObject({ head: "hello from the fixture" });
    expect(await get(`${api}/exact`)).toMatchObject({ status: 200, size: 5 * MiB });
  });

  it("carries credentials across a redirect only within their origin, as browsers do", async () => {
    const headers = { authorization: "Bearer sk_live_app_secret", cookie: "session=app", "x-keep": "1" };
    const seen = async (to: string) => JSON.parse((await get(`${api}/redirect?to=${encodeURIComponent(to)}`, { headers })).head ?? "null") as Record<string, string | null>;
    expect(await seen(`${api}/headers`)).toEqual({ authorization: "Bearer sk_live_app_secret", cookie: "session=app", keep: "1" });
    expect(await seen(`${other}/headers`)).toEqual({ authorization: null, cookie: null, keep: "1" });
  });

  it("refuses what the policy forbids, with a clear error in app code", async () => {
    expect((await get(`${api}/big`)).error).toMatch(/^TypeError: EgressTooLarge: .* 5242880/);
    expect((await get(`http://api.fixture.test:${fixture.port}/ok`)).error).toMatch(/EgressRefused: .*only https is allowed \(got http\)/);
    expect((await get(`https://undeclared.fixture.test:${fixture.port}/ok`)).error).toMatch(/EgressRefused: .*is not declared in manifest.capabilities.origins/);
    expect((await get(`${api}/chain/6`)).error).toMatch(/EgressRefused: .*more than 5 redirects/);
  });

  it("records a capability_error diag entry naming the origin, never its query", async () => {
    await get(`https://undeclared.fixture.test:${fixture.port}/path?token=SECRET-IN-QUERY`);
    const diag = await server.client.get(`/app/${appId}/diag`, { token: owner.token });
    const text = diag.status === 200 ? JSON.stringify(diag.body) : JSON.stringify(server.ctx.diag.list(appId));
    expect(text).toContain(`capability_error: outbound fetch to https://undeclared.fixture.test:${fixture.port} refused`);
    expect(text).not.toContain("SECRET-IN-QUERY");
    expect(text).not.toContain("/path");
  });

  it("makes zero connections to private, loopback, link-local, CGNAT, multicast and metadata addresses in any spelling", async () => {
    const refusals: string[] = [];
    const forms = [...ADDRESS_FORMS.map((row) => row.replace("$C", String(c))), ...extraOrigins.filter((o) => o.includes(hostname())).map((o) => `${o}/`)];
    for (const url of forms) refusals.push(`${url} → ${(await get(url)).error ?? "NO ERROR"}`);
    // Redirect chains: from an allowed origin to loopback, to an undeclared origin, to plain
    // http, to a name that resolves to loopback, and loopback after several good hops.
    const redirects = [
      `https://127.0.0.1:${c}/`,
      `https://[::1]:${c}/`,
      `https://169.254.169.254:${c}/latest/meta-data/`,
      `https://undeclared.fixture.test:${fixture.port}/ok`,
      `http://api.fixture.test:${fixture.port}/ok`,
      `https://localhost.:${c}/`,
      `${other}/redirect?to=${encodeURIComponent(`https://0x7f.1:${c}/`)}`,
    ];
    for (const to of redirects) refusals.push(`redirect ${to} → ${(await get(`${api}/redirect?to=${encodeURIComponent(to)}`)).error ?? "NO ERROR"}`);

    expect(forms.length + redirects.length).toBeGreaterThanOrEqual(50);
    for (const line of refusals) expect(line).toMatch(/→ TypeError: Egress(Refused|Failed): outbound fetch to \S+ refused: /);
    expect(canary.connections()).toBe(0);
  });
});

// $C is the canary's port. URL parsing normalises the IPv4 spellings before any check runs;
// each must still be refused.
const ADDRESS_FORMS = [
  "https://127.0.0.1:$C/",
  "https://127.0.0.2:$C/",
  "https://127.255.255.254:$C/",
  "https://0x7f.1:$C/",
  "https://0x7f000001:$C/",
  "https://127.1:$C/",
  "https://2130706433:$C/",
  "https://0177.0.0.1:$C/",
  "https://017700000001:$C/",
  "https://0x7f.0.0.1:$C/",
  "https://localhost:$C/",
  "https://LOCALHOST:$C/",
  "https://app.localhost:$C/",
  "https://localhost.:$C/",
  "https://0.0.0.0:$C/",
  "https://0:$C/",
  "https://10.0.0.1:$C/",
  "https://10.255.255.255:$C/",
  "https://172.16.0.1:$C/",
  "https://172.31.255.255:$C/",
  "https://192.168.0.1:$C/",
  "https://192.168.255.255:$C/",
  "https://100.64.0.1:$C/",
  "https://100.127.255.254:$C/",
  "https://169.254.169.254:$C/",
  "https://169.254.0.1:$C/",
  "https://224.0.0.1:$C/",
  "https://239.255.255.250:$C/",
  "https://240.0.0.1:$C/",
  "https://255.255.255.255:$C/",
  "https://192.0.0.1:$C/",
  "https://198.18.0.1:$C/",
  "https://192.0.2.1:$C/",
  "https://198.51.100.7:$C/",
  "https://203.0.113.9:$C/",
  "https://[::1]:$C/",
  "https://[0:0:0:0:0:0:0:1]:$C/",
  "https://[::]:$C/",
  "https://[::ffff:127.0.0.1]:$C/",
  "https://[::ffff:7f00:1]:$C/",
  "https://[0:0:0:0:0:ffff:127.0.0.1]:$C/",
  "https://[::ffff:10.0.0.1]:$C/",
  "https://[::ffff:192.168.1.1]:$C/",
  "https://[::ffff:169.254.169.254]:$C/",
  "https://[fd00::1]:$C/",
  "https://[fc00::1]:$C/",
  "https://[fe80::1]:$C/",
  "https://[fe80::a9fe:a9fe]:$C/",
  "https://[ff02::1]:$C/",
  "https://[fec0::1]:$C/",
  "https://[64:ff9b::7f00:1]:$C/",
  "https://[64:ff9b::a9fe:a9fe]:$C/",
  "https://[2002:7f00:1::]:$C/",
  "https://[2002:c0a8:101::1]:$C/",
];

function fetcherModule(origins: string[]): string {
  return `export const manifest = {
  id: "fetcher",
  capabilities: { origins: ${JSON.stringify(origins)} },
  routes: { get: { access: "read" } },
};
export default {
  async fetch(request) {
    const { url, method, body, headers } = await request.json();
    try {
      const res = await fetch(url, { method: method ?? "GET", body, headers });
      const text = await res.text();
      return Response.json({ ok: true, value: { status: res.status, size: text.length, head: text.slice(0, 100) } });
    } catch (e) {
      return Response.json({ ok: true, value: { error: String(e) } });
    }
  },
};`;
}
