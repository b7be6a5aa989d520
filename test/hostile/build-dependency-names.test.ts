import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as tar from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manifestOf } from "../helpers/apps.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/**
 * A dependency's name comes from the registry's packument, not from the app: held to npm's name
 * rules only for the app's own imports, `../../../../x` became the folder
 * `node_modules/../../../../x`, and its tarball unpacked outside the build's work folder (next to
 * DATA_DIR), with the service's rights. A hostile or compromised registry, or a proxy letting such
 * a name through, is all it takes. The build now fails instead (resolve.ts isPackageName, and
 * pipeline.ts refuses any folder outside its own).
 */

async function tarball(files: Record<string, string>): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), "audit-pkg-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const chunks: Buffer[] = [];
  for await (const chunk of tar.c({ gzip: true, cwd: dir, prefix: "package/", portable: true }, Object.keys(files))) chunks.push(chunk);
  rmSync(dir, { recursive: true, force: true });
  return Buffer.concat(chunks);
}

let server: TestServer;
let registry: Server;
const marker = `brickyard-audit-escaped-${randomBytes(6).toString("hex")}`;
const evilName = `../../../../${marker}`;

beforeAll(async () => {
  const tarballs = new Map<string, Buffer>();
  tarballs.set("host", await tarball({ "package.json": JSON.stringify({ name: "host", version: "1.0.0", main: "index.js" }), "index.js": "module.exports = 1;" }));
  tarballs.set("evil", await tarball({ "package.json": JSON.stringify({ name: "evil", version: "1.0.0" }), "PWNED.txt": "written outside the build folder" }));
  const integrity = (b: Buffer) => `sha512-${createHash("sha512").update(b).digest("base64")}`;
  let base = "";
  const packument = (name: string, key: string, deps: Record<string, string>) => ({
    name,
    "dist-tags": { latest: "1.0.0" },
    versions: { "1.0.0": { name, version: "1.0.0", dependencies: deps, dist: { tarball: `${base}tarballs/${key}.tgz`, integrity: integrity(tarballs.get(key) ?? Buffer.alloc(0)) } } },
    time: { "1.0.0": "2020-01-01T00:00:00.000Z" },
  });
  registry = createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? "/").slice(1));
    if (path === "host") return res.end(JSON.stringify(packument("host", "host", { [evilName]: "1.0.0" })));
    if (path === evilName) return res.end(JSON.stringify(packument(evilName, "evil", {})));
    const t = /^tarballs\/(\w+)\.tgz$/.exec(path);
    const found = t?.[1] === undefined ? undefined : tarballs.get(t[1]);
    if (found !== undefined) return res.end(found);
    res.statusCode = 404;
    res.end("{}");
  });
  await new Promise<void>((r) => registry.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(registry.address() as AddressInfo).port}/`;
  server = await startServer({ env: { NPM_REGISTRY_URL: base, BUILD_RETRY_MS: "20" } });
});

afterAll(async () => {
  await server.close();
  await new Promise((r) => registry.close(r));
  rmSync(join(dirname(server.config.dataDir), marker), { recursive: true, force: true });
});

describe("hostile: a dependency name from the registry", () => {
  it("cannot unpack outside the build's folder: the build fails, and nothing is written there", async () => {
    const module = `import "npm:host@1.0.0";
  export const manifest = ${JSON.stringify(manifestOf("host-user", ["run"]))};
  export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };
  `;
    const res = await server.client.post("/app", { module });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    let body = res.body;
    for (let i = 0; i < 60 && !["published", "failed", "superseded", "canceled", "expired"].includes(body.state); i++) {
      body = (await server.client.get(new URL(body.statusUrl).pathname, { token: res.body.token, headers: { prefer: "wait=5" } })).body;
    }
    const escaped = join(dirname(server.config.dataDir), marker, "PWNED.txt");
    expect({ state: body.state, escapedFileExists: existsSync(escaped) }, JSON.stringify(body)).toEqual({ state: "failed", escapedFileExists: false });
    expect(JSON.stringify(body.error ?? body)).toContain("which no npm package can be named");
  });
});
