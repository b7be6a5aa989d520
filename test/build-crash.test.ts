import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestDatabase, describeEachDialect } from "./helpers/dialects.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";
import { freePort, poll } from "./helpers/process.ts";

const run = promisify(execFile);
const BIN = fileURLToPath(new URL("../bin/brickyard.js", import.meta.url));

const MODULE = `import { greet } from "npm:greet@^1.0.0";
export const manifest = { id: "survivor", routes: { run: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: greet("crash") }); } };
`;

/**
 * Issue 17: build jobs live in the database. A server killed (SIGKILL of its whole process
 * group) while a build is under way leaves the job leased to a dead holder; once the lease runs
 * out, the restarted server takes it over and publishes it.
 */
describeEachDialect("a build survives kill -9", (dialect) => {
  let env: Record<string, string>;
  let token = "";
  let cleanup: () => Promise<void>;
  let child: ChildProcess | null = null;
  let base = "";
  let registry: NpmRegistry;

  beforeAll(async () => {
    registry = await startNpmRegistry();
    const dataDir = mkdtempSync(join(tmpdir(), "brickyard-build-crash-"));
    const database = dialect === "postgres" ? await createTestDatabase() : null;
    const { BASE_URL: _vite, ...inherited } = process.env;
    env = {
      ...inherited,
      DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
      NPM_REGISTRY_URL: registry.url,
      // A dead holder's lease runs out after a second, not the production 30.
      BUILD_LEASE_MS: "1000",
      ...(database ? { DATABASE_URL: database.url } : {}),
    };
    cleanup = async () => {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
      await registry.close();
    };
    const cli = (...args: string[]) => run(process.execPath, [BIN, ...args], { env, timeout: 60_000 });
    await cli("migrate");
    await cli("user", "create", "--email", "builder@example.test", "--handle", "builder", "--password", "long enough pw");
    token = (await cli("token", "mint", "builder", "--days", "2")).stdout.trim();
  });
  afterAll(async () => {
    await killGroup();
    await cleanup();
  });

  async function start(): Promise<void> {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [BIN, "serve"], { env: { ...env, PORT: String(port), BASE_URL: base }, stdio: "ignore", detached: true });
    await poll(() => fetch(`${base}/healthz`).then((res) => (res.ok ? res : Promise.reject(new Error(String(res.status))))));
  }

  function killGroup(): Promise<void> {
    const victim = child;
    child = null;
    if (victim?.pid === undefined || victim.exitCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => victim.once("exit", () => resolve()));
    process.kill(-victim.pid, "SIGKILL");
    return exited;
  }

  const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers }, body: body === undefined ? null : JSON.stringify(body) });

  it("the restarted server takes the job over and publishes it", { timeout: 120_000 }, async () => {
    await start();
    const held = registry.hold();
    const accepted = (await (await api("POST", "/app", { module: MODULE })).json()) as { buildId: string; appId: string; state: string };
    expect(accepted.state).not.toBe("published");
    // The build is resolving: its packument request waits in the registry when the kill lands.
    await held.reached;
    await killGroup();
    held.release();
    await start();
    let status: { state: string; attempts: number; revision?: number } = { state: "queued", attempts: 0 };
    for (let i = 0; i < 20 && !["published", "failed", "superseded", "canceled", "expired"].includes(status.state); i++) {
      status = (await (await api("GET", `/api/v1/builds/${accepted.buildId}`, undefined, { prefer: "wait=5" })).json()) as typeof status;
    }
    expect(status).toMatchObject({ state: "published", revision: 1 });
    expect(status.attempts).toBeGreaterThanOrEqual(2);
    const ran = (await (await api("POST", `/app/${accepted.appId}/api/run`, {})).json()) as { value: unknown };
    expect(ran.value).toBe("hello, crash (greet 1.2.0)");
  });
});
