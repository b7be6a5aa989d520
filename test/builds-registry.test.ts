import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BuildError } from "../src/domain/builds/build-error.ts";
import { scanImports } from "../src/domain/builds/imports.ts";
import { MAX_VERSIONS } from "../src/domain/builds/packument.ts";
import { Registry } from "../src/domain/builds/registry.ts";
import { BuildPipeline } from "../src/domain/builds/pipeline.ts";
import { resolveImports } from "../src/domain/builds/resolve.ts";
import { parseModule } from "../src/domain/source/manifest.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";

const importsOf = (code: string) => {
  const module = `${code}\nexport const manifest = { id: "x", routes: { run: {} } };\nexport default { fetch() {} };`;
  return scanImports(parseModule(module), module).npm;
};

/** The registry is outside our control: how long it may take, what its errors show, what it names. */
describe("the npm registry, answering badly", () => {
  let server: Server;
  let base = "";
  const routes = new Map<string, (res: ServerResponse) => void>();
  const drips: NodeJS.Timeout[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      const answer = routes.get(decodeURIComponent((req.url ?? "/").slice(1)));
      if (answer === undefined) res.writeHead(404).end("{}");
      else answer(res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    for (const drip of drips) clearInterval(drip);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("an answer dripped a byte at a time is cut off when the whole request has taken its time, not only after a silence", async () => {
    routes.set("drip", (res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"name":"drip","versions":{');
      drips.push(setInterval(() => res.write(" "), 100));
    });
    const registry = new Registry({ url: `http://${base}`, minReleaseAgeMs: 0, requestTimeoutMs: 1000 });
    await expect(registry.packument("drip", "npm:drip@1")).rejects.toMatchObject({ kind: "app_build_unavailable", message: `the npm registry took over 1 s to answer for http://${base}drip` });
  });

  it("the registry URL's user and password never reach the error a build shows its writer", async () => {
    routes.set("private-pkg", (res) => res.writeHead(503).end("down"));
    const registry = new Registry({ url: `http://ci-bot:hunter2-password@${base}`, minReleaseAgeMs: 0 });
    await expect(registry.packument("private-pkg", "npm:private-pkg@1")).rejects.toMatchObject({ message: `the npm registry answered 503 for http://${base}private-pkg` });
  });

  it("a packument listing more versions than any real package is refused, naming how many", async () => {
    const versions = Object.fromEntries(Array.from({ length: MAX_VERSIONS + 1 }, (_, i) => [`1.0.${i}`, { version: `1.0.${i}`, dist: { tarball: "http://x/t", integrity: "sha512-AA==" } }]));
    routes.set("wide", (res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ name: "wide", versions })));
    const registry = new Registry({ url: `http://${base}`, minReleaseAgeMs: 0 });
    await expect(registry.packument("wide", "npm:wide@1")).rejects.toMatchObject({ kind: "app_build_failed", message: `wide lists ${MAX_VERSIONS + 1} versions; a build reads packages of at most ${MAX_VERSIONS}` });
    routes.set("garbled", (res) => res.writeHead(200, { "content-type": "application/json" }).end('{"name":'));
    await expect(registry.packument("garbled", "npm:garbled@1")).rejects.toMatchObject({ kind: "app_build_unavailable", message: "the registry's answer for garbled is not a packument" });
  });

  it("a package named constructor resolves like any other; of each version only what resolution reads is kept", async () => {
    routes.set("constructor", (res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({ name: "constructor", "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { version: "1.0.0", readme: "x".repeat(1000), dist: { tarball: "http://x/t", integrity: "sha512-AA==" } } } }),
      ),
    );
    const registry = new Registry({ url: `http://${base}`, minReleaseAgeMs: 0 });
    const tree = await resolveImports(registry, importsOf(`import "npm:constructor@1";`), {}, Date.now());
    expect(tree.direct["constructor"]?.version).toBe("1.0.0");
    // What resolution keeps of a version is what it reads: no readme.
    expect(Object.keys(tree.packages[0]?.version ?? {}).sort()).toEqual(["dist", "version"]);
  });
});

/** A build past its deadline: what it has under way ends, and it starts nothing more. */
describe("a build's deadline", () => {
  let npm: NpmRegistry;
  let dataDir: string;
  beforeAll(async () => {
    npm = await startNpmRegistry();
    dataDir = mkdtempSync(join(tmpdir(), "brickyard-deadline-"));
  });
  afterAll(async () => {
    await npm.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("ends the registry request under way when it fires, and fetches and unpacks nothing after", async () => {
    const pipeline = new BuildPipeline(new Registry({ url: npm.url, minReleaseAgeMs: 0 }), dataDir);
    const module = `import { greet } from "npm:greet@^1.0.0";\nexport const manifest = { id: "late", routes: { run: {} } };\nexport default { fetch() { return Response.json({ ok: true, value: greet("a") }); } };`;
    const held = npm.hold();
    const deadline = new AbortController();
    const run = pipeline.run(module, {}, Date.now(), () => Promise.resolve(), deadline.signal);
    await held.reached;
    const asked = npm.requests.length;
    const expired = new BuildError("app_build_expired", "the build did not finish before its deadline");
    deadline.abort(expired);
    await expect(run).rejects.toBe(expired);
    held.release();
    // Nothing more was asked of the registry, and no build folder was made.
    expect(npm.requests.length).toBe(asked);
    expect(existsSync(join(dataDir, "builds"))).toBe(false);
  });
});
