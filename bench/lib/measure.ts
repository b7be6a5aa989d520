// Interleaved measurement with load from another process (bench/lib/load-client.ts): every row
// runs in short slices taken in turn, so drift in a shared machine's speed falls on all rows alike.
import { fork, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface Target {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Row {
  targets: Target[];
  /** Processes besides this one whose CPU the row's requests cost (workerd). */
  pids?: () => readonly number[];
  /** Status every request must answer; anything else is reported and fails the run. */
  expect?: number;
  /** Many apps: `{app}` in a target's URL is one of these per request, drawn by a Zipf law of exponent `s`. */
  spread?: { apps: string[]; s: number };
}

export interface Result {
  rps: number;
  p50: number;
  p99: number;
  /** CPU per request in µs: this process (the server under test), its workerd children, the client. */
  serverUs: number;
  workerdUs: number;
  clientUs: number;
  /** The client's CPU over the wall time: near 1.0, the client was the bottleneck. */
  clientLoad: number;
}

interface SliceResult {
  latencies: number[];
  elapsedMs: number;
  unexpected: Record<string, number>;
  clientCpuUs: number;
}

/** The forked load generator. */
export class LoadClient {
  private constructor(private readonly child: ChildProcess) {}

  static start(): LoadClient {
    return new LoadClient(fork(join(import.meta.dirname, "load-client.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] }));
  }

  run(job: { targets: Target[]; concurrency: number; ms: number; expect?: number; spread?: Row["spread"] }): Promise<SliceResult> {
    return new Promise((resolve, reject) => {
      this.child.once("message", (message: { ok: boolean; result?: SliceResult; error?: string }) => {
        if (message.ok && message.result !== undefined) resolve(message.result);
        else reject(new Error(`load client: ${message.error ?? "failed"}`));
      });
      this.child.send(job);
    });
  }

  close(): void {
    this.child.disconnect();
  }
}

/** CPU time processes have used so far, in µs (Linux /proc; clock ticks of 10 ms). */
export function cpuOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => {
    try {
      const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
      return sum + (Number(fields[11]) + Number(fields[12])) * 10_000;
    } catch {
      return sum;
    }
  }, 0);
}

export const SLICE_MS = 250;

export async function measure<K extends string>(client: LoadClient, rows: Record<K, Row>, options: { concurrency: number; msPerRow: number }): Promise<Record<K, Result>> {
  const names = Object.keys(rows) as K[];
  const tallies = new Map(names.map((n) => [n, { latencies: [] as number[], ms: 0, serverUs: 0, workerdUs: 0, clientUs: 0 }]));
  // One unmeasured slice each first: connections, isolates, caches and the JIT warm up.
  for (const name of names) await client.run({ ...jobOf(rows[name]), concurrency: options.concurrency, ms: SLICE_MS });
  const slices = Math.ceil(options.msPerRow / SLICE_MS);
  for (let i = 0; i < slices; i++) {
    for (let j = 0; j < names.length; j++) {
      // A different row goes first each time, so none always follows the same neighbour.
      const name = names[(i + j) % names.length] as K;
      const row = rows[name];
      const tally = tallies.get(name);
      if (tally === undefined) continue;
      const pids = row.pids?.() ?? [];
      const server0 = process.cpuUsage();
      const workerd0 = cpuOf(pids);
      const slice = await client.run({ ...jobOf(row), concurrency: options.concurrency, ms: SLICE_MS });
      const server = process.cpuUsage(server0);
      const bad = Object.entries(slice.unexpected);
      if (bad.length > 0) throw new Error(`${name}: unexpected statuses ${JSON.stringify(slice.unexpected)}`);
      tally.latencies.push(...slice.latencies);
      tally.ms += slice.elapsedMs;
      tally.serverUs += server.user + server.system;
      tally.workerdUs += cpuOf(pids) - workerd0;
      tally.clientUs += slice.clientCpuUs;
    }
  }
  const out = {} as Record<K, Result>;
  for (const name of names) {
    const t = tallies.get(name) ?? { latencies: [], ms: 1, serverUs: 0, workerdUs: 0, clientUs: 0 };
    const sorted = [...t.latencies].sort((a, b) => a - b);
    const n = Math.max(1, sorted.length);
    out[name] = {
      rps: (sorted.length * 1000) / Math.max(1, t.ms),
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      serverUs: t.serverUs / n,
      workerdUs: t.workerdUs / n,
      clientUs: t.clientUs / n,
      clientLoad: t.clientUs / 1000 / Math.max(1, t.ms),
    };
  }
  return out;
}

const jobOf = (row: Row) => ({ targets: row.targets, expect: row.expect ?? 200, ...(row.spread === undefined ? {} : { spread: row.spread }) });

/**
 * The nearest-rank percentile: the smallest sample with at least `q` of all samples at or below
 * it. (Until stop 31 this took the sample one rank higher, so "p99" of 100 samples was their
 * maximum.)
 */
export function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
}

export function formatRow(name: string, r: Result): string {
  return `${name.padEnd(40)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(6)} ms  CPU/req: server ${r.serverUs.toFixed(0).padStart(4)} µs, workerd ${r.workerdUs.toFixed(0).padStart(4)} µs, client ${r.clientUs.toFixed(0).padStart(4)} µs (client load ${r.clientLoad.toFixed(2)})`;
}
