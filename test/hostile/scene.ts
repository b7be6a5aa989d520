import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { DAY } from "../../src/config/clock.ts";
import { makeUser, type FixtureUser } from "../helpers/apps.ts";
import type { ApiResponse } from "../helpers/client.ts";
import { LogCapture } from "../helpers/logs.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/**
 * The stage every attack of issue 14 plays on: a real server with production executor settings
 * (one process for claimed apps, one for free ones, the default CPU budget, ping and quarantine),
 * a well-behaved claimed app (the victim) called 8 times a second, and /healthz polled, both from
 * a probe process of their own (probe.ts), so the figures are the server's and not this
 * process's event loop, where the server runs.
 */
export interface Scene {
  server: TestServer;
  logs: LogCapture;
  owner: FixtureUser;
  victim: { id: string; token: string; op: string; expect: string };
  probe: Probe;
  close(): Promise<void>;
}

export interface Sample {
  kind: "victim" | "healthz";
  at: number;
  ms: number;
  ok: boolean;
  status: number;
}

export async function startScene(env: Record<string, string> = {}): Promise<Scene> {
  const logs = new LogCapture();
  const server = await startServer({ env: { EXECUTORS: "1", FREE_EXECUTORS: "1", LOG_LEVEL: "info", ...env }, logStream: logs });
  const owner = await makeUser(server);
  // An established account (older than a day): its apps run in the claimed lane, apart from
  // unclaimed apps and new accounts' apps (AppRunner's laneOf).
  await server.ctx.db.updateTable("users").set({ created_at: Date.now() - 2 * DAY }).where("id", "=", owner.id).execute();
  const created = await server.client.post("/app", { module: appModule("victim", { ping: `return "pong";` }) }, { token: owner.token });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const victim = { id: created.body.id as string, token: owner.token, op: "ping", expect: "pong" };
  // Warm: the first call loads the isolate, which is not what the probe measures.
  expect((await callOp(server, victim.id, victim.op, victim.token)).status).toBe(200);
  const probe = await Probe.start(server.url, victim);
  return {
    server,
    logs,
    owner,
    victim,
    probe,
    async close() {
      await probe.stop();
      await server.close();
      // Whatever the attacks did, nothing shaped like one of our tokens reached the log.
      expect(logs.text).not.toMatch(/svc_[a-z]+_[A-Za-z0-9]{8}/);
    },
  };
}

/** A module whose ops each run `body` (an async function body) and answer its value. */
export function appModule(id: string, ops: Record<string, string>, extra = ""): string {
  const routes = Object.fromEntries(Object.keys(ops).map((op) => [op, { access: "write", input: { type: "object" } }]));
  const cases = Object.entries(ops)
    .map(([op, body]) => `      case ${JSON.stringify(op)}: return Response.json({ ok: true, value: await (async () => { ${body} })() });`)
    .join("\n");
  return `export const manifest = ${JSON.stringify({ id, routes })};
${extra}
export default {
  async fetch(request, env, ctx) {
    switch (request.headers.get("x-svc-op")) {
${cases}
    }
    return Response.json({ ok: false, error: { message: "no such op" } });
  },
};
`;
}

export async function createAnonymous(server: TestServer, module: string): Promise<{ id: string; token: string }> {
  const res = await server.client.post("/app", { module });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id, token: res.body.token };
}

export function callOp(server: TestServer, appId: string, op: string, token: string, input: unknown = {}): Promise<ApiResponse> {
  return server.client.post(`/app/${appId}/api/${op}`, input, { token });
}

/** Calls `op` until an answer satisfies `until` or `ms` pass; every answer, in order. */
export async function callUntil(server: TestServer, app: { id: string; token: string }, op: string, until: (res: ApiResponse) => boolean, ms = 20_000): Promise<ApiResponse[]> {
  const answers: ApiResponse[] = [];
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const res = await callOp(server, app.id, op, app.token);
    answers.push(res);
    if (until(res)) return answers;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return answers;
}

export const quarantined = (res: ApiResponse): boolean => res.status === 503 && res.body?.error?.details?.reason === "quarantined";

/** App ids the executor quarantined, from its fault events in the server log. */
export function quarantinedApps(logs: LogCapture): string[] {
  return logs.lines().flatMap((line) => {
    const event = line.executor as { type?: string; quarantined?: string | null } | undefined;
    return event?.type === "fault" && typeof event.quarantined === "string" ? [event.quarantined] : [];
  });
}

export interface Figures {
  victimCalls: number;
  victimSuccess: number;
  victimP99: number;
  healthzCalls: number;
  healthzP99: number;
  healthzMax: number;
}

/** Success rate and p99 of the probe's samples between two instants. */
export function figures(samples: readonly Sample[], from: number, to: number): Figures {
  const inWindow = samples.filter((s) => s.at >= from && s.at <= to);
  const victim = inWindow.filter((s) => s.kind === "victim");
  const healthz = inWindow.filter((s) => s.kind === "healthz");
  return {
    victimCalls: victim.length,
    victimSuccess: victim.filter((s) => s.ok).length / Math.max(1, victim.length),
    victimP99: percentile(victim.map((s) => s.ms), 0.99),
    healthzCalls: healthz.length,
    healthzP99: percentile(healthz.map((s) => s.ms), 0.99),
    healthzMax: Math.max(0, ...healthz.map((s) => s.ms)),
  };
}

/** The bar for a window of the attack: the victim served and fast, /healthz fast. */
export function expectUnharmed(f: Figures, label: string): void {
  const text = `${label}: ${JSON.stringify(f)}`;
  expect(f.victimCalls, text).toBeGreaterThan(0);
  expect(f.victimSuccess, text).toBeGreaterThanOrEqual(0.99);
  expect(f.victimP99, text).toBeLessThanOrEqual(100);
  expect(f.healthzP99, text).toBeLessThanOrEqual(50);
}

/** One row of the closing note's table, printed where the suite's output keeps it. */
export function report(attack: string, during: Figures, after: Figures, recoverMs: number, quarantinedIds: readonly string[], names: Record<string, string>): void {
  const who = quarantinedIds.length === 0 ? "nobody" : quarantinedIds.map((id) => names[id] ?? id).join(", ");
  console.warn(
    `hostile | ${attack} | victim ${(during.victimSuccess * 100).toFixed(1)}% of ${during.victimCalls} (after ${(after.victimSuccess * 100).toFixed(1)}% of ${after.victimCalls})` +
      ` | victim p99 ${during.victimP99.toFixed(1)} ms (after ${after.victimP99.toFixed(1)}) | healthz p99 ${during.healthzP99.toFixed(1)} ms, max ${during.healthzMax.toFixed(1)}` +
      ` | recovered in ${recoverMs} ms | quarantined: ${who}`,
  );
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0;
}

const PROBE = fileURLToPath(new URL("./probe.ts", import.meta.url));
const BURST = fileURLToPath(new URL("./burst.ts", import.meta.url));

/** `n` calls of an op at once, sent from a process of their own (burst.ts); each answer's status and kind. */
export function burst(server: TestServer, app: { id: string; token: string }, op: string, input: unknown, n: number): Promise<{ status: number; kind: string | null }[]> {
  const args = JSON.stringify({ url: `${server.url}/app/${app.id}/api/${op}`, token: app.token, body: input, n });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", BURST, args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => (out += chunk));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as { status: number; kind: string | null }[]) : reject(new Error(`burst exited ${code}`))));
  });
}

export class Probe {
  readonly samples: Sample[] = [];
  /** Checks run as each sample comes in (see `until`). */
  private readonly waiters = new Set<() => void>();

  private constructor(private readonly child: ChildProcess) {}

  static async start(url: string, victim: Scene["victim"]): Promise<Probe> {
    const child = spawn(process.execPath, ["--import", "tsx", PROBE, JSON.stringify({ url, victim, rate: 8, healthzMs: 25 })], { stdio: ["pipe", "pipe", "inherit"] });
    const probe = new Probe(child);
    const lines = createInterface({ input: child.stdout });
    await new Promise<void>((resolve) => {
      lines.on("line", (line) => {
        const sample = JSON.parse(line) as Sample | { kind: "ready" };
        if (sample.kind === "ready") resolve();
        else {
          probe.samples.push(sample);
          for (const check of probe.waiters) check();
        }
      });
    });
    return probe;
  }

  /** Resolves once `n` more victim samples have come in (the stretch "after" an attack). */
  victimSamples(n: number): Promise<void> {
    const target = this.victimsSince(0) + n;
    return this.until(() => this.victimsSince(0) >= target);
  }

  /**
   * Resolves once at least `n` victim samples were taken since `from`. A window's p99 is its
   * maximum below 100 samples (nearest rank), so a window judged by its p99 should hold 100.
   */
  victimSamplesSince(from: number, n: number): Promise<void> {
    return this.until(() => this.victimsSince(from) >= n);
  }

  private victimsSince(from: number): number {
    return this.samples.filter((s) => s.kind === "victim" && s.at >= from).length;
  }

  private until(done: () => boolean): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.stdin?.end();
    await exited;
  }
}
