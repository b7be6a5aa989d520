import { mkdirSync, mkdtempSync, existsSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostAddresses, renderConfig } from "../../src/runtime/executor/workerd-config.ts";
import { expectError, makeUser } from "../helpers/apps.ts";
import type { LogCapture } from "../helpers/logs.ts";
import { startServer } from "../helpers/server.ts";
import { openFrame, openShell } from "../helpers/web.ts";
import { expectUnharmed, figures, quarantinedApps, report, startScene, type Scene, type SceneServer, type SceneUser } from "./scene.ts";

// A secret JSON and URLs must escape, and one that can be a hostname (any case).
const QUOTED = 'pa"ss\\word-7731-quoted';
const HOSTY = "HostSecret7731";

const LEAKY = `export const manifest = {
  id: "leaky",
  capabilities: { imports: ["svc:logging/emit@1.0"] },
  routes: {
    log: { access: "write", input: { type: "object" } },
    host: { access: "write", input: { type: "object" } },
    ingest: { access: "write", input: { type: "object" } },
  },
};
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    if (op === "log") {
      await env.LOG.emit("info", "the value is " + env.QUOTED + " in " + JSON.stringify(env.QUOTED), { s: env.QUOTED, twice: JSON.stringify({ s: env.QUOTED }), url: "https://x.test/?q=" + encodeURIComponent(env.QUOTED) });
      throw new Error("failing with " + JSON.stringify({ s: env.QUOTED }));
    }
    if (op === "host") {
      try { await fetch("https://" + env.HOSTY + ".example.com/"); } catch {}
      return Response.json({ ok: true, value: "tried" });
    }
    return Response.json({ ok: true, value: { key: "stored" } });
  },
};`;

/** Every form a secret can take in text we show or keep. */
function forms(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  return [value, json, JSON.stringify(json).slice(1, -1), encodeURIComponent(value), value.toLowerCase()];
}

/** One raw HTTP/1.1 exchange over a socket: what fetch() refuses to send. */
function rawRequest(url: string, head: string): Promise<{ status: number; contentType: string; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const [headers = "", body = ""] = text.split("\r\n\r\n");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headers)?.[1] ?? 0), contentType: /content-type: ([^\r\n]+)/i.exec(headers)?.[1] ?? "", body });
    });
  });
}

/**
 * Issue 14's smaller leaks, each tried the way an attacker would; the last test scans the whole
 * server log for any secret, token or webhook key.
 */
describe("hostile: leaks and edges", () => {
  let scene: Scene;
  let server: SceneServer;
  let logs: LogCapture;
  let owner: SceneUser;
  let appId: string;
  let from: number;
  const secrets: string[] = [QUOTED, HOSTY];

  beforeAll(async () => {
    // Debug: every answered request is logged, so every URL that reaches a log is checked.
    scene = await startScene({ env: { LOG_LEVEL: "debug" } });
    ({ server, logs, owner } = scene);
    from = Date.now();
    const created = await server.client.post("/app", { module: LEAKY }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id;
    for (const [name, value] of [["QUOTED", QUOTED], ["HOSTY", HOSTY]]) {
      expect((await server.client.post(`/app/${appId}/secrets`, { name, value }, { token: owner.token })).status).toBe(201);
    }
  });
  afterAll(async () => scene.close());

  it("redacts a secret with quotes and backslashes from LOG lines, their data and the op's error, in every escaped form", async () => {
    const failed = await server.client.post(`/app/${appId}/api/log`, {}, { token: owner.token });
    expectError(failed, 500, "operation_failed");
    const diag = await server.client.get(`/app/${appId}/diag`, { token: owner.token });
    expect(diag.status).toBe(200);
    const text = JSON.stringify(failed.body) + diag.text;
    expect(text).toContain("[secret QUOTED]");
    for (const form of forms(QUOTED)) expect(text).not.toContain(form);
  });

  it("redacts a secret used as a hostname from the egress refusal's diag entry", async () => {
    expect((await server.client.post(`/app/${appId}/api/host`, {}, { token: owner.token })).body.value).toBe("tried");
    const diag = await server.client.get(`/app/${appId}/diag`, { token: owner.token });
    expect(diag.text).toContain("outbound fetch to https://[secret HOSTY].example.com");
    for (const form of forms(HOSTY)) expect(diag.text).not.toContain(form);
  });

  it("logs neither ?k%65y= webhook keys nor ?%74= render tokens, however the name is spelled", async () => {
    const hook = await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "ingest", name: "sink" }, { token: owner.token });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const { id, secret } = hook.body.webhook as { id: string; secret: string };
    secrets.push(secret);
    const delivered = await server.client.post(`/api/v1/hooks/${id}?k%65y=${secret}`, { event: "ping" });
    expect(delivered.status, JSON.stringify(delivered.body)).toBeLessThan(300);
    const render = await openShell(server, `/@${owner.handle}/leaky`, owner.cookie);
    secrets.push(render);
    expect((await server.client.get(`/app/${appId}/frame?%74=${render}`)).status).toBe(200);
    // The server runs in a process of its own: its lines for these requests come a moment later.
    const logged = (url: string) => logs.find((line) => (line.req as { url?: string } | undefined)?.url === url);
    await logged(`/api/v1/hooks/${id}?k%65y=[redacted]`);
    await logged(`/app/${appId}/frame?%74=[redacted]`);
  });

  it("takes from the render-token refresh buckets only after authenticating: 70 anonymous POSTs do not block the holder", async () => {
    const query = await openShell(server, `/@${owner.handle}/leaky`, owner.cookie);
    const token = await openFrame(server, appId, query);
    for (let i = 0; i < 70; i++) expectError(await server.client.post(`/app/${appId}/render-token`), 401, "unauthorized");
    const refreshed = await server.client.post(`/app/${appId}/render-token`, undefined, { token });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    secrets.push(token, refreshed.body.token);
  });

  it("answers framework and parser errors in the envelope, never echoing the request", async () => {
    const badPath = await server.client.get("/app/%zz%E0%A4%A/source");
    expectError(badPath, 400, "invalid_request");
    const cases: [string, string, number][] = [
      ["headers too large", `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(70_000)}\r\n\r\n`, 431],
      ["NUL in a header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Nul: a\0b\r\n\r\n", 400],
      ["two Content-Lengths", "POST /app HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400],
      ["not HTTP", "HELLO\r\n\r\n", 400],
      ["an Expect other than 100-continue", "POST /app HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n", 417],
    ];
    for (const [what, head, status] of cases) {
      const res = await rawRequest(server.url, head);
      expect({ what, status: res.status, type: res.contentType }).toEqual({ what, status, type: "application/json; charset=utf-8" });
      const envelope = JSON.parse(res.body) as { ok: boolean; error: { kind: string } };
      expect(envelope).toMatchObject({ ok: false, error: { kind: "invalid_request" } });
    }
  });

  it("answers the claim-session swap in JSON, never HTML", async () => {
    const anonymous = await server.client.post("/app", { module: LEAKY.replace('id: "leaky"', 'id: "claimable"') });
    const res = await server.client.post(`/app/${anonymous.body.id}/claim-session`, { token: "svc_app_wrong" }, { headers: { origin: server.config.baseUrl } });
    expectError(res, 401, "unauthorized");
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const noOrigin = await server.client.post(`/app/${anonymous.body.id}/claim-session`, { token: anonymous.body.token });
    expectError(noOrigin, 403, "forbidden");
    expect(noOrigin.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });

  it("keeps brickyard.db and its WAL readable by this user only (0600)", () => {
    for (const file of ["brickyard.db", "brickyard.db-wal"]) {
      const path = join(server.config.dataDir, file);
      expect(existsSync(path), path).toBe(true);
      expect((statSync(path).mode & 0o777).toString(8), file).toBe("600");
    }
  });

  it("refuses egress to the TEST-NETs, fec0::/10 and the host's own addresses", () => {
    const config = renderConfig({
      socketPath: "/s",
      internalSocketPath: "/i",
      supervisorFile: "s.js",
      shimFile: "a.js",
      egressFile: "e.js",
      compatibilityDate: "2025-09-01",
      maxOldSpaceMb: 128,
      egress: { key: "k" },
      gc: { everyCalls: 1000, minIntervalMs: 2000 },
    });
    const deny = /deny = \[([^\]]*)\]/.exec(config)?.[1] ?? "";
    for (const range of ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "fec0::/10"]) expect(deny).toContain(`"${range}"`);
    const own = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
    expect(own.length).toBeGreaterThan(0);
    for (const nic of own) expect(deny).toContain(`"${nic.address.split("%")[0]}/${nic.family === "IPv6" ? 128 : 32}"`);
    expect(hostAddresses().length).toBe(own.length);
  });

  it("after all of the above, the server log holds no secret, token or webhook key in any form", () => {
    expect(secrets.length).toBeGreaterThanOrEqual(5);
    const text = logs.text;
    expect(text.length).toBeGreaterThan(1000);
    for (const secret of secrets) for (const form of forms(secret)) expect(text).not.toContain(form);
    expect(text).not.toMatch(/svc_[a-z]+_[A-Za-z0-9]{8}/);
  });

  it("left the claimed victim, called all along, unharmed", async () => {
    // The attacks above take ~2 s (16 victim calls, whose "p99" would be their slowest); the
    // window is judged over 100 calls, ~8 s more of the victim at 8 calls a second.
    await scene.probe.victimSamples(8);
    await scene.probe.victimSamplesSince(from, 100);
    const during = figures(scene.probe.samples, from, Date.now());
    report("leak attempts (secrets, query keys, refresh bucket, parser errors)", during, during, 0, quarantinedApps(logs), {});
    expectUnharmed(during, "leaks");
  });
});

describe("hostile: anonymous creates and stale executor directories", () => {
  it("limits anonymous creates to 30 a minute per address with the spec's headers; signed-in creates are not metered", async () => {
    const server = await startServer();
    try {
      const module = (i: number) => `export const manifest = { id: "churn-${i}", routes: { a: { access: "read" } } };\nexport default { async fetch() { return Response.json({ ok: true, value: 1 }); } };`;
      for (let i = 0; i < 30; i++) {
        const res = await server.client.post("/app", { module: module(i) });
        expect(res.status).toBe(201);
        expect(res.headers.get("ratelimit-limit")).toBe("30");
      }
      const refused = await server.client.post("/app", { module: module(30) });
      expectError(refused, 429, "rate_limited");
      expect(refused.headers.get("ratelimit-remaining")).toBe("0");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      const user = await makeUser(server);
      expect((await server.client.post("/app", { module: module(31) }, { token: user.token })).status).toBe(201);
    } finally {
      await server.close();
    }
  });

  it("counts an IPv6 client's anonymous creates per /64: two addresses of one /64 share a bucket, two /64s do not", async () => {
    const server = await startServer({ env: { TRUST_PROXY: "1" } });
    try {
      const module = (i: number) => `export const manifest = { id: "net-${i}", routes: { a: { access: "read" } } };\nexport default { async fetch() { return Response.json({ ok: true, value: 1 }); } };`;
      const from = (address: string) => ({ headers: { "x-forwarded-for": address } });
      // Thirty creates, each from a different address of 2001:db8:1:2::/64.
      for (let i = 0; i < 30; i++) expect((await server.client.post("/app", { module: module(i) }, from(`2001:db8:1:2:${(i + 1).toString(16)}::${i + 7}`))).status).toBe(201);
      expectError(await server.client.post("/app", { module: module(30) }, from("2001:db8:1:2:ffff:ffff:ffff:fffe")), 429, "rate_limited");
      expect((await server.client.post("/app", { module: module(31) }, from("2001:db8:1:3::1"))).status).toBe(201);
      // IPv4, and IPv4 as a dual-stack listener reports it, are one client.
      for (let i = 0; i < 30; i++) expect((await server.client.post("/app", { module: module(40 + i) }, from(i % 2 === 0 ? "192.0.2.9" : "::ffff:192.0.2.9"))).status).toBe(201);
      expectError(await server.client.post("/app", { module: module(70) }, from("192.0.2.9")), 429, "rate_limited");
      expect((await server.client.post("/app", { module: module(71) }, from("192.0.2.10"))).status).toBe(201);
    } finally {
      await server.close();
    }
  });

  it("removes executor directories of dead instances at start and keeps those of live ones", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "brickyard-stale-"));
    const dead = join(dataDir, "executor-dead");
    const old = join(dataDir, "executor-old");
    const live = join(dataDir, "executor-live");
    for (const dir of [dead, old, live]) mkdirSync(dir);
    writeFileSync(join(dead, "owner.pid"), "999999999");
    writeFileSync(join(live, "owner.pid"), String(process.ppid));
    writeFileSync(join(old, "internal.sock"), "");
    const server = await startServer({ env: { DATA_DIR: dataDir } });
    try {
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(old)).toBe(false);
      expect(existsSync(live)).toBe(true);
    } finally {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
