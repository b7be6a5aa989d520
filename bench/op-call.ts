// Op-call benchmark: Brickyard's executor path (Operations → pool → supervisor → loader isolate)
// against bare workerd serving the same trivial module directly, measured in the same run.
// Run: npm run bench:op-call  (env: BENCH_SECONDS=2 × BENCH_ROUNDS=3 seconds of each row, BENCH_CONCURRENCY=8,
// DATABASE_URL for PG)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { systemClock } from "../src/config/clock.ts";
import { loadConfig } from "../src/config/config.ts";
import { buildApp } from "../src/app.ts";
import { Users } from "../src/domain/accounts/users.ts";
import { Tokens } from "../src/domain/tokens/tokens.ts";
import { Activity, DiagRing } from "../src/domain/diagnostics/index.ts";
import { Operations, type AppRecord } from "../src/runtime/operations/index.ts";
import { AppStorage } from "../src/runtime/storage/index.ts";
import { Executor } from "../src/runtime/executor/executor.ts";
import type { AppCode, CodeSource } from "../src/runtime/executor/types.ts";
import { migrate, openStore } from "../src/store/index.ts";
import { startBareWorkerd } from "./lib/servers.ts";

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

/** One row of the table: where its calls go, and a fresh caller when its app has had enough. */
interface Row {
  /** A caller for the next stretch of this row, warmed up. Ceilings are per app per minute. */
  fresh: () => Promise<() => Promise<unknown>>;
  pids: () => readonly number[];
}

interface Tally {
  latencies: number[];
  ms: number;
  nodeUs: number;
  workerdUs: number;
}

const SLICE_MS = 250;
// At 10,000 calls a second, 2 s of one app's calls stay under the enterprise ceiling of 30,000 a
// minute, however the slices spread them.
const APP_MS = 2000;

/** Runs `call` from CONCURRENCY loops for `ms`; adds what it saw to `tally`. */
async function slice(call: () => Promise<unknown>, pids: readonly number[], ms: number, tally: Tally): Promise<void> {
  const node0 = process.cpuUsage();
  const workerd0 = cpuOf(pids);
  const start = performance.now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await call();
        tally.latencies.push(performance.now() - t);
      }
    }),
  );
  const node = process.cpuUsage(node0);
  tally.ms += performance.now() - start;
  tally.nodeUs += node.user + node.system;
  tally.workerdUs += cpuOf(pids) - workerd0;
}

/**
 * Measures every row in short slices taken in turn, SECONDS × ROUNDS of each in all. The machine
 * is shared and its speed drifts over seconds; rows measured one after another for seconds each
 * saw different machines, so their ratios swung more than the changes they were meant to show.
 */
async function measure<K extends string>(rows: Record<K, Row>): Promise<Record<K, Result>> {
  const names = Object.keys(rows) as K[];
  const state = new Map(names.map((name) => [name, { call: null as (() => Promise<unknown>) | null, appMs: 0, tally: { latencies: [], ms: 0, nodeUs: 0, workerdUs: 0 } }]));
  const slices = Math.ceil((SECONDS * ROUNDS * 1000) / SLICE_MS);
  for (let i = 0; i < slices; i++) {
    // A different row goes first each time, so none always follows the same neighbour.
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length] as K;
      const s = state.get(name);
      if (s === undefined) continue;
      if (s.call === null || s.appMs >= APP_MS) {
        s.call = await rows[name].fresh();
        s.appMs = 0;
      }
      const before = s.tally.ms;
      await slice(s.call, rows[name].pids(), SLICE_MS, s.tally);
      s.appMs += s.tally.ms - before;
    }
  }
  const out = {} as Record<K, Result>;
  for (const name of names) {
    const tally = state.get(name)?.tally;
    const latencies = [...(tally?.latencies ?? [])].sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    const n = Math.max(1, latencies.length);
    out[name] = { rps: (latencies.length * 1000) / Math.max(1, tally?.ms ?? 0), p50: at(0.5), p99: at(0.99), nodeUs: (tally?.nodeUs ?? 0) / n, workerdUs: (tally?.workerdUs ?? 0) / n };
  }
  return out;
}

async function bareWorkerd(dir: string): Promise<{ call: () => Promise<unknown>; pid: number | undefined; stop: () => void }> {
  const socket = join(dir, "bare.sock");
  const { pid, stop } = await startBareWorkerd(dir, TRIVIAL, `unix:${socket}`);
  const agent = new Agent({ connect: { socketPath: socket } });
  return {
    pid,
    call: async () => {
      const res = await request("http://bare/api/op", { dispatcher: agent, method: "POST", body: "{}", headers: { "content-type": "application/json" } });
      return res.body.json();
    },
    stop: () => {
      stop();
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
  // A fresh app now and then, for the same reason as the executor rows' apps.
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
  const ops = new Operations(executor, { diag, activity: new Activity(store.db, systemClock), clock: systemClock, baseUrl: "http://bench.invalid" });
  const bare = await bareWorkerd(dir);
  const http = await brickyardOverHttp(dir);
  try {
    const app = (id: string, module: string, revision = 1, imports: string[] = []): AppRecord => {
      code.modules.set(`${id}:${revision}`, module);
      // Enterprise ceilings so the benchmark measures the executor, not the run-per-minute limit.
      return { id, revision, plan: "enterprise", manifest: { routes: { op: {} }, capabilities: { imports } } };
    };
    const call = (a: AppRecord) => () => ops.call({ app: a, role: "owner", op: "op", input: {}, trigger: "http", userId: null });
    // A fresh app now and then (see APP_MS), warmed up before it is measured.
    let made = 0;
    const warm = async (caller: () => Promise<unknown>) => {
      for (let i = 0; i < 100; i++) await caller();
      return caller;
    };
    const executorRow = (name: string, module: string, imports: string[] = []): Row => ({
      fresh: () => warm(call(app(`bench-${name}-${made++}`, module, 1, imports))),
      pids: () => executor.pool.pids(),
    });
    const { baseline, trivial, overHttp, kv, kvCold } = await measure({
      baseline: { fresh: () => warm(bare.call), pids: () => (bare.pid === undefined ? [] : [bare.pid]) },
      trivial: executorRow("trivial", TRIVIAL),
      overHttp: { fresh: async () => warm(await http.appCall(made++)), pids: http.pids },
      kv: executorRow("kv", KV_MODULE, ["svc:storage/kv@1.0"]),
      kvCold: executorRow("kv-cold", KV_COLD_MODULE, ["svc:storage/kv@1.0"]),
    });

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
      `op-call benchmark: ${CONCURRENCY} concurrent, ${SECONDS * ROUNDS} s of each row in ${SLICE_MS} ms slices taken in turn, store ${store.dialect}, ${executor.pool.pids().length} workerd processes, KV read cache ${store.dialect === "sqlite" ? "on" : "off"}`,
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
