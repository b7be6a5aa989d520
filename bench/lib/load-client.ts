// The load generator, forked by the benchmarks so that no request is made from the event loop
// of the server being measured. It waits for a job over IPC, sends requests from `concurrency`
// loops for `ms` milliseconds on one keep-alive pool, and answers with latencies, the statuses it
// did not expect, and its own CPU time, so a saturated client shows in the report.
import { Agent, request } from "undici";

interface Job {
  targets: { url: string; method?: string; headers?: Record<string, string>; body?: string }[];
  concurrency: number;
  ms: number;
  expect?: number;
  /** Many apps: each request's `{app}` in the URL becomes one of `apps`, drawn by a Zipf law of exponent `s` (the first the most popular). */
  spread?: { apps: string[]; s: number };
}

/** Draws ranks 0..n-1 with P(k) ∝ 1/(k+1)^s: a host's long tail of rarely called apps. */
function zipf(n: number, s: number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) cdf[k] = sum += 1 / (k + 1) ** s;
  return () => {
    const u = Math.random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cdf[mid] ?? 0) < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

let sampler: { key: string; draw: () => number } | null = null;
function urlFor(url: string, spread: Job["spread"]): string {
  if (spread === undefined) return url;
  const key = `${spread.apps.length} ${spread.s}`;
  if (sampler?.key !== key) sampler = { key, draw: zipf(spread.apps.length, spread.s) };
  return url.replace("{app}", spread.apps[sampler.draw()] ?? "");
}

const agents = new Map<string, Agent>();
function agentFor(origin: string, concurrency: number): Agent {
  const key = `${origin} ${concurrency}`;
  let agent = agents.get(key);
  if (agent === undefined) {
    agent = new Agent({ connections: concurrency, pipelining: 1, keepAliveTimeout: 60_000 });
    agents.set(key, agent);
  }
  return agent;
}

async function run({ targets, concurrency, ms, expect = 200, spread }: Job) {
  const agent = agentFor(new URL(targets[0]?.url ?? "").origin, concurrency);
  const latencies: number[] = [];
  const unexpected: Record<number, number> = {};
  let next = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        // Several targets (one app per slice's share, say) are taken in turn.
        const target = targets[next++ % targets.length];
        if (target === undefined) return;
        const t = performance.now();
        const res = await request(urlFor(target.url, spread), { dispatcher: agent, method: (target.method ?? "GET") as "GET", headers: target.headers ?? {}, body: target.body ?? null });
        await res.body.dump();
        latencies.push(performance.now() - t);
        if (res.statusCode !== expect) unexpected[res.statusCode] = (unexpected[res.statusCode] ?? 0) + 1;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { latencies, elapsedMs: performance.now() - start, unexpected, clientCpuUs: cpu.user + cpu.system };
}

process.on("message", (job: Job) => {
  run(job).then(
    (result) => process.send?.({ ok: true, result }),
    (error: unknown) => process.send?.({ ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
process.on("disconnect", () => process.exit(0));
