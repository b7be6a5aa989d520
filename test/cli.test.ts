import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestDatabase, describeEachDialect } from "./helpers/dialects.ts";
import { freePort, poll } from "./helpers/process.ts";

const run = promisify(execFile);
const BIN = fileURLToPath(new URL("../bin/brickyard.js", import.meta.url));

describeEachDialect("brickyard CLI", (dialect) => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "brickyard-cli-"));
    const database = dialect === "postgres" ? await createTestDatabase() : null;
    // Vitest puts Vite's BASE_URL=/ into the environment; the CLI must not inherit it.
    const { BASE_URL: _vite, ...inherited } = process.env;
    env = { ...inherited, DATA_DIR: dataDir, LOG_LEVEL: "warn", ...(database ? { DATABASE_URL: database.url } : {}) };
    cleanup = async () => {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    };
  });
  afterAll(async () => cleanup());

  const cli = (...args: string[]) => run(process.execPath, [BIN, ...args], { env, timeout: 60_000 });

  it("migrates, creates a user, sets a plan and mints a token that the server accepts", async () => {
    expect((await cli("migrate")).stdout).toContain("migrations applied");
    const created = await cli("user", "create", "--email", "Ops@Example.test", "--handle", "ops", "--password", "long enough pw");
    expect(created.stdout).toMatch(/^created @ops \(/);
    expect((await cli("user", "plan", "ops", "pro")).stdout).toContain("@ops is now on pro");
    const token = (await cli("token", "mint", "ops", "--days", "2")).stdout.trim();
    expect(token).toMatch(/^svc_user_[0-9A-Za-z]{49}$/);

    await expect(cli("user", "plan", "ops", "platinum")).rejects.toMatchObject({ code: 2 });
    await expect(cli("token", "mint", "nobody")).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("no user with handle nobody") });
    await expect(cli("frobnicate")).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("usage: brickyard") });

    // `serve` on the same data: the CLI's token works, and SIGTERM shuts down cleanly.
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, "serve"], { env: { ...env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
    try {
      const me = await poll(() => fetch(`http://127.0.0.1:${port}/api/me`, { headers: { authorization: `Bearer ${token}` } }));
      expect(me.status).toBe(200);
      expect(await me.json()).toMatchObject({ user: { handle: "ops", email: "ops@example.test", plan: "pro" } });
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
    // Eight process starts, each compiling TypeScript on load: slow on a busy two-core machine.
  }, 180_000);
});
