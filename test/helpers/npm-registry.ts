import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tar from "tar";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "npm");

interface Version {
  name: string;
  version: string;
  manifest: Record<string, unknown>;
  tarball: Buffer;
  /** What the packument claims; differs from the tarball's own for `mismatch`. */
  integrity: string;
}

export interface RegistryRequest {
  path: string;
  authorization: string | undefined;
}

export interface NpmRegistry {
  /** The registry's URL, with a trailing slash, for NPM_REGISTRY_URL. */
  url: string;
  /** Every request, in order. */
  requests: RegistryRequest[];
  /** Answer every request 503 while true. */
  down: boolean;
  /** Holds every answer until `release` is called; `reached` resolves when a request waits. */
  hold(): { reached: Promise<void>; release: () => void };
  /** A version's publication time (`time` of the full packument). */
  publishedAt(name: string, version: string, iso: string): void;
  close(): Promise<void>;
}

/**
 * A small npm-protocol registry on loopback: packuments (with `time`) and tarballs made with
 * `tar` from the folders in test/fixtures/npm (`name@version/`), plus packages built here that
 * cannot sit in the repository: `linky` (a symlink out of the package), `huge` (a tarball past
 * the 20 MiB cap). `mismatch`'s packument names an integrity its tarball does not have.
 * `tarballsAt` points the packuments' tarball URLs at another registry (another origin).
 */
export async function startNpmRegistry(options: { tarballsAt?: string } = {}): Promise<NpmRegistry> {
  const work = mkdtempSync(join(tmpdir(), "brickyard-npm-"));
  const versions = new Map<string, Version[]>();
  const times = new Map<string, string>();
  const add = async (dir: string, options: { lie?: boolean } = {}) => {
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name: string; version: string };
    const files = readdirSync(dir);
    const chunks: Buffer[] = [];
    const stream = tar.c({ gzip: true, cwd: dir, prefix: "package/", portable: true, follow: false }, files);
    for await (const chunk of stream) chunks.push(chunk);
    const tarball = Buffer.concat(chunks);
    const digestOf = (bytes: Buffer) => `sha512-${createHash("sha512").update(bytes).digest("base64")}`;
    const integrity = options.lie === true ? digestOf(Buffer.from("not this tarball")) : digestOf(tarball);
    const list = versions.get(manifest.name) ?? [];
    list.push({ name: manifest.name, version: manifest.version, manifest, tarball, integrity });
    versions.set(manifest.name, list);
  };
  for (const entry of readdirSync(FIXTURES)) await add(join(FIXTURES, entry), { lie: entry.startsWith("mismatch@") });
  // A package whose data.js is a symlink to a file outside it.
  const linky = join(work, "linky");
  mkdirSync(linky);
  writeFileSync(join(work, "outside.js"), 'export default "OUTSIDE THE PACKAGE";\n');
  writeFileSync(join(linky, "package.json"), JSON.stringify({ name: "linky", version: "1.0.0", type: "module", main: "index.js" }));
  writeFileSync(join(linky, "index.js"), 'export { default } from "./data.js";\n');
  symlinkSync(join(work, "outside.js"), join(linky, "data.js"));
  await add(linky);
  // Random bytes do not compress: the tarball stays past 20 MiB.
  const huge = join(work, "huge");
  mkdirSync(huge);
  writeFileSync(join(huge, "package.json"), JSON.stringify({ name: "huge", version: "1.0.0", main: "index.js" }));
  writeFileSync(join(huge, "index.js"), "module.exports = 1;\n");
  writeFileSync(join(huge, "blob.bin"), randomBytes(21 * 1024 * 1024));
  await add(huge);

  const requests: RegistryRequest[] = [];
  let holding: { waiters: (() => void)[]; reached: () => void } | null = null;
  const state = { down: false };
  let base = "";

  const packument = (name: string) => {
    const list = versions.get(name);
    if (list === undefined) return null;
    const sorted = [...list].sort((a, b) => a.version.localeCompare(b.version, undefined, { numeric: true }));
    return {
      name,
      "dist-tags": { latest: sorted[sorted.length - 1]?.version },
      versions: Object.fromEntries(
        sorted.map((v) => [v.version, { ...v.manifest, dist: { tarball: `${options.tarballsAt ?? base}-/${encodeURIComponent(name)}-${v.version}.tgz`, integrity: v.integrity } }]),
      ),
      time: Object.fromEntries(sorted.map((v) => [v.version, times.get(`${name}@${v.version}`) ?? "2020-01-01T00:00:00.000Z"])),
    };
  };

  const server: Server = createServer((req: IncomingMessage, res) => {
    const path = decodeURIComponent((req.url ?? "/").split("?")[0] ?? "/");
    requests.push({ path, authorization: req.headers.authorization });
    if (state.down) {
      res.writeHead(503).end("down");
      return;
    }
    const answer = () => {
      const tgz = /^\/-\/(.+)-(\d+\.\d+\.\d+)\.tgz$/.exec(path);
      if (tgz !== null) {
        const found = versions.get(tgz[1] ?? "")?.find((v) => v.version === tgz[2]);
        if (found === undefined) res.writeHead(404).end();
        else res.writeHead(200, { "content-type": "application/octet-stream" }).end(found.tarball);
        return;
      }
      const doc = packument(path.slice(1));
      if (doc === null) res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(doc));
    };
    if (holding === null) answer();
    else {
      holding.waiters.push(answer);
      holding.reached();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  return {
    url: base,
    requests,
    get down() {
      return state.down;
    },
    set down(value: boolean) {
      state.down = value;
    },
    hold() {
      let reached!: () => void;
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
      const held = { waiters: [] as (() => void)[], reached };
      holding = held;
      return {
        reached: reachedPromise,
        release: () => {
          if (holding === held) holding = null;
          for (const send of held.waiters) send();
        },
      };
    },
    publishedAt(name, version, iso) {
      times.set(`${name}@${version}`, iso);
    },
    async close() {
      holding?.waiters.forEach((send) => send());
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(work, { recursive: true, force: true });
    },
  };
}
