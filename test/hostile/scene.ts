import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { expect } from "vitest";
import { DAY } from "../../src/config/clock.ts";
import { Client, type ApiResponse } from "../helpers/client.ts";
import { LogCapture } from "../helpers/logs.ts";
import { brickyardCli, instanceProcess, serverEnv } from "../helpers/server-process.ts";

/** A real `brickyard serve` in a process of its own, as an attacker meets it, with its log kept. */
export interface SceneServer {
  url: string;
  client: Client;
  config: { baseUrl: string; dataDir: string };
  logs: LogCapture;
}

/** A signed-in person of the scene's server. */
export interface SceneUser {
  handle: string;
  token: string;
  cookie: string;
}

/** An app called all through an attack: the claimed app of an established account, or an anonymous app past its first calls. */
export interface Victim {
  name: "claimed" | "anonymous";
  id: string;
  token: string;
  op: string;
  expect: string;
}

/**
 * The stage every attack of the hostile suite plays on: a real server in a process of its own
 * with production executor settings (one process for claimed apps, one for free ones, one of each
 * for first calls, the default CPU budget, ping and quarantine), victims called `rate` times a
 * second, and /healthz polled, both from a probe process of their own (probe.ts). The test process
 * runs neither, so the figures are the server's alone.
 */
export interface Scene {
  server: SceneServer;
  logs: LogCapture;
  /** An established account (older than a day): its apps run in the claimed lane. */
  owner: SceneUser;
  /** The claimed victim (victims[0]). */
  victim: Victim;
  victims: Victim[];
  /** How reports name app ids: the victims from the start; a test adds its attackers. */
  names: Record<string, string>;
  probe: Probe;
  close(): Promise<void>;
}

export interface Sample {
  kind: "victim" | "healthz";
  /** Which victim, for a victim sample. */
  name?: string;
  at: number;
  ms: number;
  ok: boolean;
  status: number;
}

export interface SceneOptions {
  env?: Record<string, string>;
  /** The claimed victim always; an established anonymous one too when asked. */
  anonymousVictim?: boolean;
  /** Calls a second to each victim. */
  rate?: number;
}

const PASSWORD = "correct horse battery staple";

export async function startScene(options: SceneOptions = {}): Promise<Scene> {
  const server = await startSceneServer(options.env ?? {});
  const owner = server.owner;
  const victims: Victim[] = [await makeVictim(server, "claimed", owner.token)];
  if (options.anonymousVictim === true) {
    const anonymous = await createAnonymous(server, appModule("anon-victim", { ping: `return "pong";` }, "", "read"));
    victims.push(await makeVictim(server, "anonymous", anonymous.token, anonymous.id));
  }
  const probe = await Probe.start(server.url, victims, options.rate ?? 8);
  return {
    server,
    logs: server.logs,
    owner,
    victim: victims[0] as Victim,
    victims,
    names: Object.fromEntries(victims.map((v) => [v.id, `${v.name} victim`])),
    probe,
    async close() {
      await probe.stop();
      await server.close();
      // Whatever the attacks did, nothing shaped like one of our tokens reached the log.
      expect(server.logs.text).not.toMatch(/svc_[a-z]+_[A-Za-z0-9]{8}/);
    },
  };
}

/** A victim's app: created (or given), then called past its first calls, so it runs where established apps run. */
async function makeVictim(server: SceneServer, name: Victim["name"], token: string, id?: string): Promise<Victim> {
  let appId = id;
  if (appId === undefined) {
    const created = await server.client.post("/app", { module: appModule("victim", { ping: `return "pong";` }, "", "read") }, { token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id as string;
  }
  const victim: Victim = { name, id: appId, token, op: "ping", expect: "pong" };
  await graduate(server, victim, victim.op);
  return victim;
}

/**
 * Calls an app until its code has proven itself (the executor's first calls, 3 of them), then
 * waits for the warm-up that builds it where its calls go next: the probe measures established
 * apps, not isolate builds.
 */
export async function graduate(server: SceneServer, app: { id: string; token: string }, op: string): Promise<void> {
  const graduated = server.logs.next((line) => {
    const event = line.executor as { type?: string; appId?: string } | undefined;
    return event?.type === "graduated" && event.appId === app.id;
  });
  for (let i = 0; i < 3; i++) expect((await callOp(server, app.id, op, app.token)).status).toBe(200);
  await graduated;
  expect((await callOp(server, app.id, op, app.token)).status).toBe(200);
}

export interface StartedSceneServer extends SceneServer {
  owner: SceneUser;
  close(): Promise<void>;
}

/**
 * `brickyard serve` on a fresh SQLite data folder, in its own process group, its stdout kept as
 * the log. The owner is made with the CLI before it starts and dated two days back, so its apps
 * are an established account's.
 */
export async function startSceneServer(extraEnv: Record<string, string>): Promise<StartedSceneServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-scene-"));
  const env = serverEnv({ DATA_DIR: dataDir, EXECUTORS: "1", FREE_EXECUTORS: "1", NEW_EXECUTORS: "1", LOG_LEVEL: "info", ...extraEnv });
  const cli = brickyardCli(env);
  await cli("migrate");
  const handle = "owner";
  await cli("user", "create", "--email", "owner@example.test", "--handle", handle, "--password", PASSWORD);
  const token = (await cli("token", "mint", handle, "--days", "2")).stdout.trim();
  const db = new Database(join(dataDir, "brickyard.db"));
  try {
    db.prepare("UPDATE users SET created_at = ? WHERE handle = ?").run(Date.now() - 2 * DAY, handle);
  } finally {
    db.close();
  }
  const logs = new LogCapture();
  const instance = instanceProcess(env, undefined, (line) => void logs.write(`${line}\n`));
  await instance.start();
  const client = new Client(instance.base, instance.base);
  const login = await client.post("/api/auth/login", { login: handle, password: PASSWORD }, { headers: { origin: instance.base } });
  expect(login.status, JSON.stringify(login.body)).toBe(200);
  const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  return {
    url: instance.base,
    client,
    config: { baseUrl: instance.base, dataDir },
    logs,
    owner: { handle, token, cookie },
    async close() {
      await instance.killGroup();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A new account made through the API, as an attacker makes one (a session, then a token). */
export async function signUp(server: SceneServer): Promise<SceneUser> {
  const handle = `u${Math.random().toString(36).slice(2, 10)}`;
  const signup = await server.client.post("/api/auth/signup", { email: `${handle}@example.test`, handle, password: PASSWORD }, { headers: { origin: server.url } });
  expect(signup.status, JSON.stringify(signup.body)).toBe(201);
  const cookie = (signup.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const minted = await server.client.post("/api/token", {}, { cookie, headers: { origin: server.url } });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  return { handle, token: minted.body.token as string, cookie };
}

/** A module whose ops each run `body` (an async function body) and answer its value. */
export function appModule(id: string, ops: Record<string, string>, extra = "", access: "read" | "write" = "write"): string {
  const routes = Object.fromEntries(Object.keys(ops).map((op) => [op, { access, input: { type: "object" } }]));
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

/** An anonymous create, from `from` (an address a trusted proxy names) when given. */
export async function createAnonymous(server: Pick<SceneServer, "client">, module: string, from?: string): Promise<{ id: string; token: string }> {
  const res = await server.client.post("/app", { module }, from === undefined ? {} : { headers: { "x-forwarded-for": from } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id, token: res.body.token };
}

export function callOp(server: Pick<SceneServer, "client">, appId: string, op: string, token: string, input: unknown = {}): Promise<ApiResponse> {
  return server.client.post(`/app/${appId}/api/${op}`, input, { token });
}

/** Calls `op` until an answer satisfies `until` or `ms` pass; every answer, in order. */
export async function callUntil(server: Pick<SceneServer, "client">, app: { id: string; token: string }, op: string, until: (res: ApiResponse) => boolean, ms = 20_000): Promise<ApiResponse[]> {
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
/**
 * Waits for the server's line that quarantined `appId`: the server is another process, and its
 * line may reach us a little after the answer that said so.
 */
export async function quarantineLogged(logs: LogCapture, appId: string): Promise<void> {
  await logs.find((line) => {
    const event = line.executor as { type?: string; quarantined?: string | null } | undefined;
    return event?.type === "fault" && event.quarantined === appId;
  });
}

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

/** Success rate and p99 of the probe's samples between two instants (of one victim, when named). */
export function figures(samples: readonly Sample[], from: number, to: number, name?: Victim["name"]): Figures {
  const inWindow = samples.filter((s) => s.at >= from && s.at <= to);
  const victim = inWindow.filter((s) => s.kind === "victim" && (name === undefined || s.name === name));
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
export function burst(server: Pick<SceneServer, "url">, app: { id: string; token: string }, op: string, input: unknown, n: number): Promise<{ status: number; kind: string | null }[]> {
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

  static async start(url: string, victims: readonly Victim[], rate: number): Promise<Probe> {
    const child = spawn(process.execPath, ["--import", "tsx", PROBE, JSON.stringify({ url, victims, rate, healthzMs: 25 })], { stdio: ["pipe", "pipe", "inherit"] });
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
