// Op-call benchmark: Brickyard's executor path (Operations → pool → supervisor → loader isolate)
// against bare workerd serving the same trivial module directly, measured in the same run.
// Run: npm run bench:op-call  (env: BENCH_SECONDS=2, BENCH_ROUNDS=3, BENCH_CONCURRENCY=8, DATABASE_URL for PG)
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { systemClock } from "../src/config/clock.ts";
import { loadConfig } from "../src/config/config.ts";
import { buildApp } from "../src/app.ts";
import { Users } from "../src/domain/accounts/users.ts";
import { Tokens } from "../src/domain/tokens/tokens.ts";
import { Activity, DiagRing } from "../src/domain/diagnostics/index.ts";
import { Operations, type AppRecord } from "../src/domain/operations/index.ts";
import { AppStorage } from "../src/domain/storage/index.ts";
import { Executor } from "../src/executor/executor.ts";
import type { AppCode, CodeSource } from "../src/executor/types.ts";
import { workerdBinary } from "../src/executor/workerd-config.ts";
import { migrate, openStore } from "../src/store/index.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TRIVIAL = `export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };`;
const KV_MODULE = `export default { async fetch(request, env) {
  const a = await env.KV.get("a"); const b = await env.KV.get("b");
  await env.KV.set("c", (a ?? 0) + (b ?? 0) + 1);
  return Response.json({ ok: true, value: 1 });
} };`;
// The same op reading keys no call has read before: every read goes to the store, uncached.
const KV_COLD_MODULE = KV_MODULE.replace('env.KV.get("a")', 'env.KV.get("a" + Math.random())').replace('env.KV.get("b")', 'env.KV.get("b" + Math.random())');

interface Result {
  rps: number;
  p50: number;
  p99: number;
  /** CPU per call, in microseconds: this Node process, and the workerd processes together. */
  nodeUs: number;
  workerdUs: number;
}

/** CPU time processes have used so far, in microseconds (Linux /proc; clock ticks of 10 ms). */
function cpuOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => {
    const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
    return sum + (Number(fields[11]) + Number(fields[12])) * 10_000;
  }, 0);
}

async function measure(call: () => Promise<unknown>, workerdPids: () => readonly number[]): Promise<Result> {
  for (let i = 0; i < 100; i++) await call(); // warm up
  const latencies: number[] = [];
  const node0 = process.cpuUsage();
  const pids = workerdPids();
  const workerd0 = cpuOf(pids);
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const start = performance.now();
        await call();
        latencies.push(performance.now() - start);
      }
    }),
  );
  const node = process.cpuUsage(node0);
  const workerd = cpuOf(pids) - workerd0;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  const n = Math.max(1, latencies.length);
  return { rps: latencies.length / SECONDS, p50: at(0.5), p99: at(0.99), nodeUs: (node.user + node.system) / n, workerdUs: workerd / n };
}

function medianOf(results: Result[]): Result {
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  const of = (pick: (r: Result) => number) => median(results.map(pick));
  return { rps: of((r) => r.rps), p50: of((r) => r.p50), p99: of((r) => r.p99), nodeUs: of((r) => r.nodeUs), workerdUs: of((r) => r.workerdUs) };
}

async function bareWorkerd(dir: string): Promise<{ call: () => Promise<unknown>; pid: number | undefined; stop: () => void }> {
  writeFileSync(join(dir, "trivial.js"), TRIVIAL);
  const socket = join(dir, "bare.sock");
  writeFileSync(
    join(dir, "bare.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = (modules = [(name = "trivial.js", esModule = embed "trivial.js")], compatibilityDate = "2025-09-01")) ],
  sockets = [ (name = "http", address = "unix:${socket}", http = (), service = "main") ],
);`,
  );
  const child = spawn(workerdBinary(), ["serve", "--control-fd=3", join(dir, "bare.capnp")], { stdio: ["ignore", "ignore", "inherit", "pipe"] });
  await new Promise<void>((resolve, reject) => {
    child.stdio[3]?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes('"listen"')) resolve();
    });
    child.once("exit", () => reject(new Error("bare workerd exited")));
  });
  const agent = new Agent({ connect: { socketPath: socket } });
  return {
    pid: child.pid,
    call: async () => {
      const res = await request("http://bare/api/op", { dispatcher: agent, method: "POST", body: "{}", headers: { "content-type": "application/json" } });
      return res.body.json();
    },
    stop: () => {
      child.kill("SIGKILL");
      void agent.close();
    },
  };
}

/**
 * The whole service as `npm start` runs it (HTTP, auth, app lookup, plan, secrets, executor),
 * serving the trivial module as an app owned by an enterprise user; calls carry that user's
 * token, as an agent's would.
 */
async function brickyardOverHttp(dir: string): Promise<{ appCall: (round: number) => Promise<() => Promise<unknown>>; pids: () => number[]; stop: () => Promise<void> }> {
  const config = loadConfig({ ...process.env, PORT: "0", HOST: "127.0.0.1", DATA_DIR: join(dir, "http"), LOG_LEVEL: "warn" });
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  await migrate(store);
  const built = await buildApp({ config, store, background: false });
  await built.http.listen({ port: 0, host: "127.0.0.1" });
  const address = built.http.server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP port");
  const origin = `http://127.0.0.1:${address.port}`;
  const users = new Users(store.db, systemClock);
  await users.create({ email: "bench@example.com", handle: "bench", password: "bench-password-1" });
  const user = await users.setPlan("bench", "enterprise");
  const { token } = await new Tokens(store.db, systemClock, config).mintUserToken(user.id, { name: "bench", days: 1 });
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };
  // One app per round, for the same reason as the executor rows' apps.
  const appCall = async (round: number) => {
    const module = `export const manifest = { id: "bench-${round}", routes: { op: {} } };\n${TRIVIAL}`;
    const created = await request(`${origin}/app`, { dispatcher: agent, method: "POST", body: JSON.stringify({ module }), headers });
    const { id } = (await created.body.json()) as { id: string };
    if (created.statusCode !== 201) throw new Error(`creating the bench app failed: ${created.statusCode}`);
    return async () => {
      const res = await request(`${origin}/app/${id}/api/op`, { dispatcher: agent, method: "POST", body: "{}", headers });
      if (res.statusCode !== 200) throw new Error(`op call answered ${res.statusCode}: ${await res.body.text()}`);
      return res.body.json();
    };
  };
  return {
    appCall,
    pids: () => built.ctx.executor.pool.pids(),
    stop: async () => {
      await agent.close();
      await built.http.close();
      await store.close();
    },
  };
}

class BenchCode implements CodeSource {
  readonly modules = new Map<string, string>();
  load(appId: string, revision: number): Promise<AppCode | null> {
    const module = this.modules.get(`${appId}:${revision}`);
    return Promise.resolve(module === undefined ? null : { module, imports: [], origins: [], routes: {} });
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "brickyard-bench-"));
  const store = openStore({ databaseUrl: process.env.DATABASE_URL ?? null, dataDir: dir });
  await migrate(store);
  const code = new BenchCode();
  const diag = new DiagRing(systemClock);
  const executor = await Executor.start({ dataDir: dir, processes: loadConfig(process.env).executors, code, storage: new AppStorage(store, systemClock), log: diag, clock: systemClock });
  const ops = new Operations(executor, diag, new Activity(store.db, systemClock), systemClock, "http://bench.invalid");
  const bare = await bareWorkerd(dir);
  const http = await brickyardOverHttp(dir);
  try {
    const app = (id: string, module: string, revision = 1, imports: string[] = []): AppRecord => {
      code.modules.set(`${id}:${revision}`, module);
      // Enterprise ceilings so the benchmark measures the executor, not the run-per-minute limit.
      return { id, revision, plan: "enterprise", manifest: { routes: { op: {} }, capabilities: { imports } } };
    };
    // A fresh app per round: even enterprise ceilings (30,000 runs a minute per app) would
    // otherwise stop a fast run. measure() warms each one up first.
    const apps = (round: number) => ({
      trivial: app(`bench-trivial-${round}`, TRIVIAL),
      kv: app(`bench-kv-${round}`, KV_MODULE, 1, ["svc:storage/kv@1.0"]),
      kvCold: app(`bench-kv-cold-${round}`, KV_COLD_MODULE, 1, ["svc:storage/kv@1.0"]),
    });
    const call = (a: AppRecord) => () => ops.call({ app: a, role: "owner", op: "op", input: {}, trigger: "http", userId: null });

    // Rounds alternate the three so a load spike from elsewhere on the machine hits all alike;
    // each figure is the median over rounds.
    const rounds: { baseline: Result; trivial: Result; overHttp: Result; kv: Result; kvCold: Result }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const { trivial: trivialApp, kv: kvApp, kvCold: kvColdApp } = apps(r);
      rounds.push({
        baseline: await measure(bare.call, () => (bare.pid === undefined ? [] : [bare.pid])),
        trivial: await measure(call(trivialApp), () => executor.pool.pids()),
        overHttp: await measure(await http.appCall(r), http.pids),
        kv: await measure(call(kvApp), () => executor.pool.pids()),
        kvCold: await measure(call(kvColdApp), () => executor.pool.pids()),
      });
    }
    const baseline = medianOf(rounds.map((r) => r.baseline));
    const trivial = medianOf(rounds.map((r) => r.trivial));
    const overHttp = medianOf(rounds.map((r) => r.overHttp));
    const kv = medianOf(rounds.map((r) => r.kv));
    const kvCold = medianOf(rounds.map((r) => r.kvCold));

    const firstCalls: number[] = [];
    for (let revision = 1; revision <= 200; revision++) {
      const fresh = app("bench-fresh", TRIVIAL.replace("value: 1", `value: ${revision}`), revision);
      const start = performance.now();
      await call(fresh)();
      firstCalls.push(performance.now() - start);
    }
    firstCalls.sort((a, b) => a - b);

    const row = (name: string, r: Result) =>
      `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   CPU/call: node ${r.nodeUs.toFixed(0)} µs, workerd ${r.workerdUs.toFixed(0)} µs`;
    console.log(
      `op-call benchmark: ${CONCURRENCY} concurrent, ${SECONDS} s each, median of ${ROUNDS} rounds, store ${store.dialect}, ${executor.pool.pids().length} workerd processes, KV read cache ${store.dialect === "sqlite" ? "on" : "off"}`,
    );
    console.log(row("bare workerd, trivial module", baseline));
    console.log(row("brickyard (a) trivial op", trivial));
    console.log(row("  (a) over HTTP with a user token", overHttp));
    console.log(row("brickyard (b) 2 KV reads + 1 write", kv));
    console.log(row("  (b) with reads never cached", kvCold));
    console.log(`ratio (a)/bare throughput: ${(trivial.rps / baseline.rps).toFixed(2)}   (target >= 0.5; p50 target <= 1.5 ms; over HTTP: ${(overHttp.rps / baseline.rps).toFixed(2)})`);
    console.log(`ratio (b)/(a) throughput:  ${(kv.rps / trivial.rps).toFixed(2)}   (target >= 0.5; uncached reads: ${(kvCold.rps / trivial.rps).toFixed(2)})`);
    const pick = (q: number) => (firstCalls[Math.min(firstCalls.length - 1, Math.floor(q * firstCalls.length))] ?? 0).toFixed(2);
    console.log(`first call of a new revision (200 revisions): p50 ${pick(0.5)} ms, p99 ${pick(0.99)} ms   (target p99 <= 20 ms)`);
  } finally {
    bare.stop();
    await http.stop();
    await executor.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
