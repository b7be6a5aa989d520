import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.ts";
import { firstScreen } from "../src/start/first-screen.ts";
import { freePort } from "./helpers/process.ts";
import { serverEnv } from "./helpers/server-process.ts";

const BIN = fileURLToPath(new URL("../bin/brickyard.js", import.meta.url));
const hasScript = spawnSync("script", ["--version"]).status === 0;

/** Runs `brickyard serve` until `done` holds for its output so far (or 30 s pass); returns the output. */
function serveUntil(argv: string[], env: Record<string, string | undefined>, done: (out: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let out = "";
    const finish = () => {
      clearTimeout(timer);
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      resolve(out);
    };
    const timer = setTimeout(finish, 30_000);
    const take = (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (done(out)) finish();
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", reject);
  });
}

describe("start: the first screen", () => {
  it("says where to open it, what it stores where, how to make an account and where agents start", () => {
    const cwd = mkdtempSync(join(tmpdir(), "brickyard-screen-"));
    const screen = firstScreen(loadConfig({ DATA_DIR: join(cwd, "data"), PORT: "8080" }), cwd);
    expect(screen).toContain("Open it        http://localhost:8080");
    expect(screen).toContain("SQLite at ./data/brickyard.db; files under ./data/blobs");
    expect(screen).toContain("sign up at http://localhost:8080/sign-up");
    expect(screen).toContain("npx brickyard user create");
    expect(screen).toContain("http://localhost:8080/llms.txt (the guide) and http://localhost:8080/mcp (MCP)");
    const closed = firstScreen(loadConfig({ DATA_DIR: join(cwd, "data"), SIGNUP: "closed", DATABASE_URL: "postgres://db/x" }), cwd);
    expect(closed).toContain("sign-up is closed (SIGNUP=closed)");
    expect(closed).toContain("PostgreSQL (DATABASE_URL)");
    rmSync(cwd, { recursive: true, force: true });
  });

  it("writes JSON lines when its output is not a terminal", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "brickyard-screen-"));
    const port = await freePort();
    const out = await serveUntil([process.execPath, BIN, "serve"], serverEnv({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "info", EXECUTORS: "1" }), (text) => text.includes("listening"));
    rmSync(dataDir, { recursive: true, force: true });
    const line = out.split("\n").find((l) => l.includes("listening")) ?? "";
    expect(JSON.parse(line)).toMatchObject({ level: 30, msg: expect.stringContaining("Server listening") });
    expect(out).not.toContain("Brickyard is serving");
  }, 40_000);

  (hasScript ? it : it.skip)(`on a terminal (a pseudo-terminal from util-linux's script), prints the first screen and readable log lines${hasScript ? "" : " — SKIPPED: no `script` command"}`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "brickyard-screen-"));
    const port = await freePort();
    const env = serverEnv({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "info", EXECUTORS: "1" });
    const out = await serveUntil(["script", "-qfc", `${process.execPath} ${BIN} serve`, "/dev/null"], env, (text) => text.includes("Ctrl-C stops it"));
    rmSync(dataDir, { recursive: true, force: true });
    expect(out).toContain(`Brickyard is serving http://localhost:${port}`);
    expect(out).toContain(`/llms.txt (the guide)`);
    expect(out).toMatch(/\[\d\d:\d\d:\d\d\] .*INFO.*Server listening/);
    expect(out).not.toContain('{"level"');
  }, 40_000);
});
