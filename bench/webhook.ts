// Webhook delivery throughput and latency against direct op calls, measured in the same run on
// the same server: `npm run bench:webhook [-- --requests 2000 --concurrency 8]`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildApp } from "../src/app.ts";
import { loadConfig } from "../src/config/config.ts";
import { migrate, openStore } from "../src/store/index.ts";

const { values } = parseArgs({
  options: { requests: { type: "string", default: "2000" }, concurrency: { type: "string", default: "8" }, warmup: { type: "string", default: "200" } },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const WARMUP = Number(values.warmup);

const MODULE = `export const manifest = {
  id: "bench-echo",
  routes: { echo: { access: "write", input: { type: "object", properties: { i: { type: "integer" } } } } },
};
export default {
  async fetch(request) {
    const body = await request.json();
    return Response.json({ ok: true, value: { i: body.i, trigger: request.headers.get("x-svc-trigger") } });
  },
};
`;

// The two paths alternate in rounds so that drift in machine load falls on both alike.
const ROUNDS = 4;

interface Result {
  perSecond: number;
  p50: number;
  p99: number;
}

/** Latencies (ms) of `count` requests sent `CONCURRENCY` at a time, and the wall time they took. */
async function round(label: string, count: number, send: (i: number) => Promise<Response>, beforeEach: (i: number) => void): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      beforeEach(i);
      const started = performance.now();
      const res = await send(i);
      await res.arrayBuffer();
      latencies.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`${label}: request ${i} answered ${res.status}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

function summarize(rounds: { latencies: number[]; seconds: number }[]): Result {
  const latencies = rounds.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const seconds = rounds.reduce((sum, r) => sum + r.seconds, 0);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { perSecond: latencies.length / seconds, p50: at(0.5), p99: at(0.99) };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-bench-"));
  const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, EXECUTORS: "1", LOG_LEVEL: "warn", ...(process.env.DATABASE_URL === undefined ? {} : { DATABASE_URL: process.env.DATABASE_URL }) });
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir });
  await migrate(store);
  const built = await buildApp({ config, store, background: false });
  try {
    await built.http.listen({ port: 0, host: "127.0.0.1" });
    const address = built.http.server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP port");
    const url = `http://127.0.0.1:${address.port}`;
    config.baseUrl = url;
    const { ctx } = built;
    const user = await ctx.users.create({ email: "bench@example.test", handle: "bench", password: "correct horse battery staple", plan: "business" });
    const { token } = await ctx.tokens.mintUserToken(user.id, {});
    const json = (body: unknown, auth: string | null) => ({
      method: "POST",
      headers: { "content-type": "application/json", ...(auth === null ? {} : { authorization: `Bearer ${auth}` }) },
      body: JSON.stringify(body),
    });
    const app = (await (await fetch(`${url}/app`, json({ module: MODULE }, token))).json()) as { id: string };
    const hook = (await (await fetch(`${url}/api/v1/apps/${app.id}/webhooks`, json({ op: "echo" }, token))).json()) as { webhook: { id: string; secret: string } };

    const direct = (i: number) => fetch(`${url}/app/${app.id}/api/echo`, json({ i }, token));
    const delivery = (i: number) => fetch(`${url}/api/v1/hooks/${hook.webhook.id}`, json({ i }, hook.webhook.secret));
    // The delivery URL's limits (300/min per address, 120/min per webhook) would turn the bench into
    // a 429 test; emptying the buckets every 100 requests keeps every request on the full path.
    const refill = (i: number) => {
      if (i % 100 === 0) ctx.limiter.reset();
    };
    const none = () => undefined;

    // Warm both paths (isolate, compiled schemas, connection pool) before measuring either.
    for (const [send, before] of [[direct, none], [delivery, refill]] as const) {
      for (let i = 0; i < WARMUP; i++) {
        before(i);
        await (await send(i)).arrayBuffer();
      }
    }
    const directRounds = [];
    const deliveryRounds = [];
    for (let r = 0; r < ROUNDS; r++) {
      directRounds.push(await round("direct", REQUESTS / ROUNDS, direct, none));
      deliveryRounds.push(await round("delivery", REQUESTS / ROUNDS, delivery, refill));
    }
    const directResult = summarize(directRounds);
    const deliveryResult = summarize(deliveryRounds);
    const fmt = (r: Result) => `${r.perSecond.toFixed(0).padStart(6)} req/s   p50 ${r.p50.toFixed(2).padStart(6)} ms   p99 ${r.p99.toFixed(2).padStart(7)} ms`;
    console.log(`${REQUESTS} requests each, concurrency ${CONCURRENCY}, ${config.databaseUrl === null ? "SQLite" : "PostgreSQL"}, 1 workerd process`);
    console.log(`direct op call   POST /app/{id}/api/echo    ${fmt(directResult)}`);
    console.log(`webhook delivery POST /api/v1/hooks/{id}    ${fmt(deliveryResult)}`);
    console.log(
      `delivery / direct: throughput ${(deliveryResult.perSecond / directResult.perSecond).toFixed(2)}x, p50 ${(deliveryResult.p50 / directResult.p50).toFixed(2)}x, p99 ${(deliveryResult.p99 / directResult.p99).toFixed(2)}x`,
    );
  } finally {
    await built.http.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
