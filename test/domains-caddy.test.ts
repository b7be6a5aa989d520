import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { createHash, X509Certificate } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_PATH, launchBrowser } from "./helpers/browser.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { startDns, type TestDns } from "./helpers/dns-server.ts";
import { makePro, makePublic, serveAt } from "./helpers/domains.ts";
import { COUNTER_UI, counterModule } from "./fixtures/counter-app.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/** Debian's caddy, found on PATH; null when this machine has none. */
function findCaddy(): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, "caddy");
    if (dir !== "" && existsSync(candidate)) return candidate;
  }
  return null;
}

const CADDY = findCaddy();
if (CADDY === null) {
  if (process.env.BRICKYARD_REQUIRE_CADDY === "1") throw new Error("BRICKYARD_REQUIRE_CADDY=1 and no caddy on PATH (apt-get install caddy)");
  console.warn("\n*** custom domains through Caddy: SKIPPED, no caddy on PATH (apt-get install caddy) ***\n");
}

/** The base64 SHA-256 of a certificate's public key, as Chromium's SPKI allow-list takes it. */
function spkiHash(pem: string): string {
  return createHash("sha256").update(new X509Certificate(pem).publicKey.export({ type: "spki", format: "der" })).digest("base64");
}

/** The README's Caddyfile, as an operator would copy it. */
function readmeCaddyfile(): string {
  const readme = readFileSync(resolve(import.meta.dirname, "../README.md"), "utf8");
  const match = /```caddyfile\n([\s\S]*?)```/.exec(readme);
  if (match?.[1] === undefined) throw new Error("README.md has no caddyfile block");
  return match[1];
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, "127.0.0.1", done));
  const address = probe.address();
  await new Promise((done) => probe.close(done));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** An https request through Caddy for `host`, trusting Caddy's internal CA (the client resolves every name to loopback). */
function viaCaddy(port: number, ca: string, host: string, path: string, init: { method?: string; body?: string; headers?: Record<string, string>; firstChunk?: boolean } = {}): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = httpsRequest({ host: "127.0.0.1", port, servername: host, ca, path, method: init.method ?? "GET", headers: { host, ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers } }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
        // An event stream stays open: its first event is the answer.
        if (init.firstChunk === true) {
          res.destroy();
          done({ status: res.statusCode ?? 0, body });
        }
      });
      res.on("end", () => done({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", fail);
    req.end(init.body);
  });
}

describe.skipIf(CADDY === null)("custom domains through Caddy's on-demand TLS", () => {
  let server: TestServer;
  let dns: TestDns;
  let owner: TestUser;
  let appId: string;
  let caddy: ChildProcess;
  let dir: string;
  let httpsPort: number;
  let ca: string;

  beforeAll(async () => {
    dns = await startDns();
    // Caddy connects from loopback: trusting it makes X-Forwarded-Proto https count.
    server = await startServer({ env: { DNS_RESOLVER: dns.address, TRUST_PROXY: "127.0.0.1" } });
    owner = await createUser(server);
    await makePro(server, owner.id);
    appId = (await server.client.post("/app", { module: counterModule("todo", "Todo"), ui: COUNTER_UI }, { token: owner.token })).body.id;
    await makePublic(server, owner.token, appId);
    await serveAt(server, dns, owner.token, appId, "todo.example.test");

    dir = mkdtempSync(join(tmpdir(), "brickyard-caddy-"));
    httpsPort = await freePort();
    // The README's file, with what a test needs in its global options: its own ports and
    // storage, Caddy's internal CA instead of ACME (no network here), no admin endpoint.
    const testGlobals = `\tadmin off\n\tlocal_certs\n\tskip_install_trust\n\thttp_port ${await freePort()}\n\thttps_port ${httpsPort}\n\tstorage file_system ${dir}/data\n`;
    const config = readmeCaddyfile().replace(/^\{\n/, `{\n${testGlobals}`);
    writeFileSync(join(dir, "Caddyfile"), config);
    caddy = spawn(CADDY ?? "caddy", ["run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], {
      env: { ...process.env, HOME: dir, XDG_DATA_HOME: join(dir, "xdg"), BRICKYARD_UPSTREAM: new URL(server.url).host, BRICKYARD_SITE: "localhost" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Ready once it says it serves its configuration; its log is kept for a failure's message.
    let log = "";
    await new Promise<void>((ready, fail) => {
      const watch = (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes("serving initial configuration")) ready();
      };
      caddy.stderr?.on("data", watch);
      caddy.stdout?.on("data", watch);
      caddy.on("exit", (code) => fail(new Error(`caddy exited ${code}: ${log}`)));
    });
    ca = readFileSync(join(dir, "data/pki/authorities/local/root.crt"), "utf8");
  }, 60_000);
  afterAll(async () => {
    caddy?.kill("SIGKILL");
    await server?.close();
    await dns?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("a verified hostname gets a certificate and serves the app's page, an op call and an event stream over https", { timeout: 60_000 }, async () => {
    const page = await viaCaddy(httpsPort, ca, "todo.example.test", "/", { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    // Brickyard saw https (TRUST_PROXY): the frame is on the custom origin, over https.
    expect(page.body).toContain(`src="https://todo.example.test/app/${appId}/frame?t=`);
    const op = await viaCaddy(httpsPort, ca, "todo.example.test", `/app/${appId}/api/bump`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${owner.token}` } });
    expect([op.status, JSON.parse(op.body)]).toEqual([200, { ok: true, value: 1 }]);
    const events = await viaCaddy(httpsPort, ca, "todo.example.test", `/app/${appId}/events`, { headers: { authorization: `Bearer ${owner.token}`, accept: "text/event-stream" }, firstChunk: true });
    expect(events.status).toBe(200);
    expect(events.body).toContain("event: hello");
    // The control plane is not on the custom domain.
    expect((await viaCaddy(httpsPort, ca, "todo.example.test", "/api/v1/apps")).status).toBe(404);
  });

  it.skipIf(CHROMIUM_PATH === null)("Chromium, trusting Caddy's CA, opens the app on its domain over https: the UI calls its op as the visitor", { timeout: 120_000 }, async () => {
    const authority = join(dir, "data/pki/authorities/local");
    const trusted = [spkiHash(ca), spkiHash(readFileSync(join(authority, "intermediate.crt"), "utf8"))].join(",");
    const browser = await launchBrowser(["--host-resolver-rules=MAP todo.example.test 127.0.0.1", `--ignore-certificate-errors-spki-list=${trusted}`]);
    try {
      const page = await browser.newPage();
      const response = await page.goto(`https://todo.example.test:${httpsPort}/`);
      expect(response?.status()).toBe(200);
      const frame = await (await page.locator("#app-frame").elementHandle())?.contentFrame();
      if (frame == null) throw new Error("no app frame");
      await frame.getByRole("button", { name: "Bump" }).click();
      // A first visitor's own count: 1, whatever the owner's store holds.
      await frame.locator("#n").filter({ hasText: /^1$/ }).waitFor();
      await browser.screenshot(page, "custom-domain-caddy");
    } finally {
      await browser.close();
    }
  });

  it("a hostname Brickyard does not serve gets no certificate", { timeout: 60_000 }, async () => {
    const refused = await viaCaddy(httpsPort, ca, "unverified.example.test", "/").then(
      () => null,
      (error: unknown) => error as NodeJS.ErrnoException,
    );
    // The handshake fails: Caddy asked Brickyard, heard 404, and had no certificate to offer.
    expect(refused?.message).toMatch(/alert|handshake|EPROTO/i);
    // While the served hostname's handshake, on the same listener, goes through.
    expect((await viaCaddy(httpsPort, ca, "todo.example.test", `/app/${appId}/api/bump`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${owner.token}` } })).status).toBe(200);
  });
});
