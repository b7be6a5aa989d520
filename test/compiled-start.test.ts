import { execFile, spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { build, DIST } from "../scripts/build.mjs";
import { serverEnv } from "./helpers/server-process.ts";
import { freePort, poll } from "./helpers/process.ts";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * Issue 43: what `npm start` runs is the compiled build, and the build is a whole program: a copy
 * of dist/ beside the docs and a node_modules, far from src/, serves an app and answers its op.
 */
describe("the compiled build, copied away from its sources", () => {
  let dir: string;
  let child: ChildProcess | null = null;

  beforeAll(async () => {
    await build();
    dir = mkdtempSync(join(tmpdir(), "brickyard-compiled-"));
    cpSync(DIST, join(dir, "dist"), { recursive: true });
    cpSync(join(ROOT, "docs"), join(dir, "docs"), { recursive: true });
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  });
  afterAll(() => {
    child?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("migrates, starts, serves /healthz and answers an app's op call", async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = serverEnv({ DATA_DIR: join(dir, "data"), PORT: String(port), BASE_URL: base, EXECUTORS: "1" });
    const entry = join(dir, "dist", "brickyard.js");
    expect((await run(process.execPath, [entry, "migrate"], { env, cwd: dir })).stdout).toContain("migrations applied");
    child = spawn(process.execPath, [entry, "serve"], { env, cwd: dir, stdio: "ignore" });
    await poll(() => fetch(`${base}/healthz`).then((res) => (res.ok ? res : Promise.reject(new Error(String(res.status))))));
    const module = `export const manifest = { id: "compiled", routes: { hello: { access: "read", input: { type: "object", properties: { who: { type: "string", pattern: "^[a-z]+$" } } } } } };
export default { async fetch(request) { const { who } = await request.json(); return Response.json({ ok: true, value: "hello " + who }); } };`;
    const created = await fetch(`${base}/app`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ module }) });
    const app = (await created.json()) as { id: string; token: string };
    expect(created.status).toBe(201);
    const called = await fetch(`${base}/app/${app.id}/api/hello`, { method: "POST", headers: { authorization: `Bearer ${app.token}`, "content-type": "application/json" }, body: JSON.stringify({ who: "world" }) });
    expect({ status: called.status, body: await called.json() }).toEqual({ status: 200, body: { ok: true, value: "hello world" } });
    // Files it reads beside its code at run time: the guide, and the browser SDK in the frame.
    expect((await fetch(`${base}/docs/apps`)).status).toBe(200);
  }, 60_000);
});
