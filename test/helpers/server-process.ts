import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Dialect } from "../../src/store/index.ts";
import { createTestDatabase } from "./dialects.ts";
import { freePort, poll } from "./process.ts";

const run = promisify(execFile);
const BIN = fileURLToPath(new URL("../../bin/brickyard.js", import.meta.url));

/** A real `brickyard serve` in its own process group, killed as a machine dies (SIGKILL of the group). */
export interface InstanceProcess {
  /** The running server's origin; changes with each start unless the port is fixed. */
  readonly base: string;
  /** Starts it; resolves once `/healthz` answers 200. */
  start(): Promise<void>;
  /** SIGKILL to Node and every workerd it started; resolves once it is gone. */
  killGroup(): Promise<void>;
  /** The Node process's pid while it runs. */
  readonly pid: number | null;
  /** Sends `signal` to the Node process alone; resolves once it exits, with how. */
  signal(signal: NodeJS.Signals): Promise<{ code: number | null; signal: string | null }>;
}

export interface ServerProcess extends InstanceProcess {
  /** A user token minted by the CLI for the user made at setup. */
  readonly token: string;
  /** A request as that user. */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** Kills the server, drops its database and data folder. */
  close(): Promise<void>;
}

/** The environment a server process starts from: this one's, without what vitest sets for itself. */
export function serverEnv(extraEnv: Record<string, string>): Record<string, string | undefined> {
  const { BASE_URL: _vite, ...inherited } = process.env;
  return { ...inherited, LOG_LEVEL: "warn", ...extraEnv };
}

/** Runs the `brickyard` CLI with `env` (migrate, user, token commands). */
export function brickyardCli(env: Record<string, string | undefined>): (...args: string[]) => Promise<{ stdout: string }> {
  return (...args) => run(process.execPath, [BIN, ...args], { env, timeout: 60_000 });
}

/** Migrates, makes the user `process` and mints its token. */
export async function setUpDeployment(env: Record<string, string | undefined>): Promise<string> {
  const cli = brickyardCli(env);
  await cli("migrate");
  await cli("user", "create", "--email", "process@example.test", "--handle", "process", "--password", "long enough pw");
  return (await cli("token", "mint", "process", "--days", "2")).stdout.trim();
}

/**
 * `brickyard serve` with `env`, on `port` at every start when given (an instance a load balancer
 * knows by address), else on a fresh free port. BASE_URL is the instance's own origin unless
 * `env` names one. `onLine` gets each line the server writes to stdout (its JSON log).
 */
export function instanceProcess(env: Record<string, string | undefined>, port?: number, onLine?: (line: string) => void): InstanceProcess {
  let child: ChildProcess | null = null;
  let base = "";
  const killGroup = (): Promise<void> => {
    const victim = child;
    child = null;
    if (victim?.pid === undefined || victim.exitCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => victim.once("exit", () => resolve()));
    try {
      process.kill(-victim.pid, "SIGKILL");
    } catch {
      // The group is gone already (its Node process was killed alone and its children with it).
      return Promise.resolve();
    }
    return exited;
  };
  return {
    get base() {
      return base;
    },
    async start() {
      const listen = port ?? (await freePort());
      base = `http://127.0.0.1:${listen}`;
      // Its own process group, so one signal takes Node and the workerd processes it started.
      const stdout = onLine !== undefined ? "pipe" : process.env.SERVER_PROCESS_LOGS === undefined ? "ignore" : "inherit";
      child = spawn(process.execPath, [BIN, "serve"], { env: { BASE_URL: base, ...env, PORT: String(listen) }, stdio: ["ignore", stdout, process.env.SERVER_PROCESS_LOGS === undefined ? "ignore" : "inherit"], detached: true });
      if (onLine !== undefined && child.stdout !== null) createInterface({ input: child.stdout }).on("line", onLine);
      await poll(() => fetch(`${base}/healthz`).then((res) => (res.ok ? res : Promise.reject(new Error(String(res.status))))));
    },
    killGroup,
    get pid() {
      return child?.pid ?? null;
    },
    signal(signal) {
      const victim = child;
      if (victim?.pid === undefined || victim.exitCode !== null) return Promise.reject(new Error("the server is not running"));
      const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => victim.once("exit", (code, sig) => resolve({ code, signal: sig })));
      victim.kill(signal);
      return exited;
    },
  };
}

/** Migrates a fresh data folder (and PostgreSQL database), makes a user, mints its token. */
export async function serverProcess(dialect: Dialect, extraEnv: Record<string, string> = {}): Promise<ServerProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-process-"));
  const database = dialect === "postgres" ? await createTestDatabase() : null;
  const env = serverEnv({ DATA_DIR: dataDir, ...extraEnv, ...(database ? { DATABASE_URL: database.url } : {}) });
  const token = await setUpDeployment(env);
  const instance = instanceProcess(env);
  return {
    get base() {
      return instance.base;
    },
    get pid() {
      return instance.pid;
    },
    token,
    start: () => instance.start(),
    killGroup: () => instance.killGroup(),
    signal: (signal) => instance.signal(signal),
    api: (method, path, body, headers = {}) =>
      fetch(`${instance.base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
        body: body === undefined ? null : JSON.stringify(body),
      }),
    async close() {
      await instance.killGroup();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
