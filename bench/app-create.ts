// Anonymous app creates against a real server on SQLite: 1,000 creates of a 20 KiB module,
// printing the median latency and creates per second (target: at least 300/s on one machine).
// A GET /healthz run in the same process gives the baseline the create figure is compared to.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { buildApp } from "../src/app.ts";
import { loadConfig } from "../src/config/config.ts";
import { migrate, openStore } from "../src/store/index.ts";

const CREATES = 1000;
const CONCURRENCY = 8;
const MODULE_BYTES = 20 * 1024;

function moduleOf(bytes: number): string {
  const head = `export const manifest = {
  id: "bench-app",
  displayName: "Bench app",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: {
    list: { access: "read", output: { type: "array", items: { type: "string" } } },
    add: { input: { type: "object", required: ["text"], properties: { text: { type: "string", maxLength: 200 } } } },
  },
};
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    return Response.json({ ok: true, value: op });
  },
};
`;
  const line = "// padding so the module weighs what a real small app does.\n";
  return (head + line.repeat(Math.ceil((bytes - head.length) / line.length))).slice(0, bytes);
}

// The load generator runs in a child process so the client's HTTP work neither shares the
// server's event loop nor counts in the server's CPU time.
const LOAD_CLIENT = `
const { url, method, body, total, concurrency } = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
(async () => {
  const latencies = [];
  let next = 0;
  let failed = null;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total && failed === null) {
      next++;
      const t0 = performance.now();
      const res = await fetch(url, { method, headers: body ? { "content-type": "application/json" } : {}, body });
      await res.arrayBuffer();
      if (res.status >= 300) failed = res.status;
      latencies.push(performance.now() - t0);
    }
  }));
  process.stdout.write(JSON.stringify({ latencies, elapsedMs: performance.now() - started, failed }));
})();
`;

interface RunResult {
  median: number;
  perSecond: number;
  /** Server process CPU (user + system) per request, in ms. */
  cpuMs: number;
}

async function run(label: string, total: number, url: string, method: string, body: string | null): Promise<RunResult> {
  const cpu0 = process.cpuUsage();
  const child = spawn(process.execPath, ["-e", LOAD_CLIENT], { stdio: ["pipe", "pipe", "inherit"] });
  child.stdin.end(JSON.stringify({ url, method, body, total, concurrency: CONCURRENCY }));
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  const [code] = (await once(child, "close")) as [number | null];
  const cpu = process.cpuUsage(cpu0);
  if (code !== 0) throw new Error(`${label}: load client exited with ${code}`);
  const result = JSON.parse(out) as { latencies: number[]; elapsedMs: number; failed: number | null };
  if (result.failed !== null) throw new Error(`${label}: unexpected status ${result.failed}`);
  const latencies = result.latencies.sort((a, b) => a - b);
  return {
    median: latencies[Math.floor(latencies.length / 2)] ?? 0,
    perSecond: total / (result.elapsedMs / 1000),
    cpuMs: (cpu.user + cpu.system) / 1000 / total,
  };
}

const dataDir = mkdtempSync(join(tmpdir(), "brickyard-bench-"));
const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, LOG_LEVEL: "warn", EXECUTORS: "1" });
const store = openStore({ databaseUrl: null, dataDir });
await migrate(store);
const built = await buildApp({ config, store });
await built.http.listen({ port: 0, host: "127.0.0.1" });
const address = built.http.server.address();
if (address === null || typeof address === "string") throw new Error("no TCP port");
const url = `http://127.0.0.1:${address.port}`;
const body = JSON.stringify({ module: moduleOf(MODULE_BYTES) });

try {
  // Warm up the JIT, the schema cache and SQLite's page cache before measuring.
  for (let i = 0; i < 50; i++) await fetch(`${url}/app`, { method: "POST", headers: { "content-type": "application/json" }, body }).then((r) => r.arrayBuffer());

  const baseline = await run("healthz", CREATES, `${url}/healthz`, "GET", null);
  const creates = await run("create", CREATES, `${url}/app`, "POST", body);

  console.log(`anonymous POST /app, ${CREATES} creates of a ${MODULE_BYTES / 1024} KiB module, ${CONCURRENCY} in flight, SQLite`);
  console.log(`  median latency   ${creates.median.toFixed(2)} ms`);
  console.log(`  creates/second   ${creates.perSecond.toFixed(0)}   (target >= 300: ${creates.perSecond >= 300 ? "met" : "NOT met"})`);
  console.log(`  server CPU/create ${creates.cpuMs.toFixed(2)} ms   (one free core would sustain ~${(1000 / creates.cpuMs).toFixed(0)}/s before fsync waits)`);
  console.log(`  baseline GET /healthz: ${baseline.perSecond.toFixed(0)}/s, median ${baseline.median.toFixed(2)} ms, server CPU ${baseline.cpuMs.toFixed(2)} ms/request`);
  console.log(`  ratio creates/healthz: ${(creates.perSecond / baseline.perSecond).toFixed(3)}`);
} finally {
  await built.http.close();
  rmSync(dataDir, { recursive: true, force: true });
}
