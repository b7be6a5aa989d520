// Builds (issue 17): a module importing 3 small npm packages (ESM, CommonJS with a built-in,
// and one with a dependency of its own) from a loopback registry, against a real server process.
//   cold:   the first build, with an empty tarball cache
//   warm:   a build of new source with the same packages (tarballs cached; resolve, bundle, load check)
//   cached: the same source again, published at once from its bundle, as a ratio of a plain
//           upsert of a module without imports measured interleaved in the same run (target <= 2x)
// The server runs in its own process; this one only sends requests and times them.
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startNpmRegistry } from "../test/helpers/npm-registry.ts";
import { freePort, poll } from "../test/helpers/process.ts";

const WARM_RUNS = 5;
const PUBLISH_RUNS = 60;
const BIN = fileURLToPath(new URL("../bin/brickyard.js", import.meta.url));
const run = promisify(execFile);

const npmModule = (salt: string) => `import { greet } from "npm:greet@^1.0.0";
import { shout } from "npm:shout@1";
import relay from "npm:cjs-events@1";
export const manifest = { id: "bench-build", routes: { run: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: [greet("a"), shout("b"), relay("c")] }); } };
// ${salt}
`;
const plainModule = `export const manifest = { id: "bench-plain", routes: { run: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };
`;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};

async function main(): Promise<void> {
  const registry = await startNpmRegistry();
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-bench-build-"));
  const { BASE_URL: _ignored, ...inherited } = process.env;
  const env = { ...inherited, DATA_DIR: dataDir, LOG_LEVEL: "warn", NPM_REGISTRY_URL: registry.url };
  const cli = (...args: string[]) => run(process.execPath, [BIN, ...args], { env });
  await cli("migrate");
  await cli("user", "create", "--email", "bench@example.test", "--handle", "bench", "--password", "long enough pw");
  const token = (await cli("token", "mint", "bench", "--days", "1")).stdout.trim();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = spawn(process.execPath, [BIN, "serve"], { env: { ...env, PORT: String(port), BASE_URL: base }, stdio: "ignore" });
  try {
    await poll(() => fetch(`${base}/healthz`).then((res) => (res.ok ? res : Promise.reject(new Error(String(res.status))))));
    const post = async (module: string): Promise<{ ms: number; status: number; state?: string }> => {
      const t0 = performance.now();
      const res = await fetch(`${base}/app`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", prefer: "wait=60" },
        body: JSON.stringify({ module }),
      });
      const body = (await res.json()) as { state?: string; error?: unknown };
      const ms = performance.now() - t0;
      if (res.status >= 300 && res.status !== 202) throw new Error(`POST /app answered ${res.status}: ${JSON.stringify(body)}`);
      if (res.status === 202 && body.state !== "published") throw new Error(`the build ended ${body.state}: ${JSON.stringify(body)}`);
      return { ms, status: res.status, ...(body.state === undefined ? {} : { state: body.state }) };
    };

    const cold = await post(npmModule("cold"));
    const warm: number[] = [];
    for (let i = 0; i < WARM_RUNS; i++) warm.push((await post(npmModule(`warm ${i}`))).ms);
    await post(plainModule);
    const cached: number[] = [];
    const plain: number[] = [];
    // Interleaved, so both rows see the same machine.
    for (let i = 0; i < PUBLISH_RUNS; i++) {
      const hit = await post(npmModule("cold"));
      if (hit.status !== 200) throw new Error(`the same source answered ${hit.status}, not 200 from the cached bundle`);
      cached.push(hit.ms);
      plain.push((await post(plainModule)).ms);
    }
    const ratio = median(cached) / median(plain);
    console.log(`build of 3 small npm packages (greet, shout -> greet@2, cjs-events), loopback registry, SQLite`);
    console.log(`  cold build (empty tarball cache)   ${cold.ms.toFixed(0)} ms`);
    console.log(`  warm build (new source, cached)    ${median(warm).toFixed(0)} ms median of ${WARM_RUNS}`);
    console.log(`  cached publish (same source)       ${median(cached).toFixed(2)} ms median of ${PUBLISH_RUNS}`);
    console.log(`  plain upsert (no imports)          ${median(plain).toFixed(2)} ms median of ${PUBLISH_RUNS}`);
    console.log(`  ratio cached/plain                 ${ratio.toFixed(2)}   (target <= 2: ${ratio <= 2 ? "met" : "NOT met"})`);
    console.log(`bench-build: cold-ms=${cold.ms.toFixed(0)} warm-ms=${median(warm).toFixed(0)} cached/plain=${ratio.toFixed(2)}`);
  } finally {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    await registry.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
