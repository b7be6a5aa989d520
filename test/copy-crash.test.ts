import { execFile, spawn, type ChildProcess } from "node:child_process";
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

// Fills the app with 16 blobs of 1 MiB and 200 KV values; `count` reports what a copy holds.
const MODULE = `export const manifest = {
  id: "crash-source",
  capabilities: { imports: ["svc:storage/kv@1.0", "svc:storage/blob@1.0"] },
  routes: { fill: { access: "write" }, count: { access: "read" } },
};
export default {
  async fetch(request, env) {
    if (request.headers.get("x-svc-op") === "fill") {
      for (let i = 0; i < 16; i++) await env.BLOB.put("b" + i, new Uint8Array(1024 * 1024).fill(i), { contentType: "application/octet-stream" });
      for (let i = 0; i < 200; i++) await env.KV.set("k" + i, { i, pad: "x".repeat(100) });
      return Response.json({ ok: true, value: true });
    }
    const kv = await env.KV.list({ limit: 1000 });
    const blobs = await env.BLOB.list({ limit: 1000 });
    return Response.json({ ok: true, value: { kv: kv.keys.length, blobs: blobs.keys.length } });
  },
};
`;

/**
 * Issue 16: a copy with data is one transaction, so a server killed mid-copy (SIGKILL of the whole
 * process group: Node and its workerd children, as when the machine dies) leaves either no copy
 * or a complete one, never code without data. Kills land at several points of the copy.
 */
describeEachDialect("copy with data survives kill -9", (dialect) => {
  let env: Record<string, string>;
  let token = "";
  let cleanup: () => Promise<void>;
  let child: ChildProcess | null = null;
  let base = "";

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "brickyard-crash-"));
    const database = dialect === "postgres" ? await createTestDatabase() : null;
    const { BASE_URL: _vite, ...inherited } = process.env;
    env = { ...inherited, DATA_DIR: dataDir, LOG_LEVEL: "warn", ...(database ? { DATABASE_URL: database.url } : {}) };
    cleanup = async () => {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    };
    const cli = (...args: string[]) => run(process.execPath, [BIN, ...args], { env, timeout: 60_000 });
    await cli("migrate");
    await cli("user", "create", "--email", "crash@example.test", "--handle", "crash", "--password", "long enough pw");
    token = (await cli("token", "mint", "crash", "--days", "2")).stdout.trim();
  });
  afterAll(async () => {
    await killGroup();
    await cleanup();
  });

  async function start(): Promise<void> {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // Its own process group, so one signal takes Node and the workerd processes it started.
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

  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? null : JSON.stringify(body) });

  it("leaves no copy or a complete one, wherever the kill lands", { timeout: 240_000 }, async () => {
    await start();
    const created = (await (await api("POST", "/app", { module: MODULE })).json()) as { id: string };
    expect((await api("POST", `/app/${created.id}/api/fill`, {})).status).toBe(200);
    const whole = (await (await api("POST", `/app/${created.id}/api/count`, {})).json()) as { value: unknown };
    expect(whole.value).toEqual({ kv: 200, blobs: 16 });

    const outcomes: string[] = [];
    for (const [i, delayMs] of [0, 200, 2500].entries()) {
      const copying = api("POST", `/app/${created.id}/copy`, { manifest_id: `crash-copy-${i}`, include_data: true }).catch(() => null);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await killGroup();
      await copying;
      await start();
      const apps = ((await (await api("GET", "/app?limit=100")).json()) as { apps: { id: string; manifestId: string }[] }).apps;
      const copy = apps.find((a) => a.manifestId === `crash-copy-${i}`);
      if (copy === undefined) {
        outcomes.push("none");
        continue;
      }
      const counted = (await (await api("POST", `/app/${copy.id}/api/count`, {})).json()) as { value: unknown };
      expect(counted.value, `copy ${i} (kill after ${delayMs} ms)`).toEqual(whole.value);
      outcomes.push("complete");
    }
    // Each outcome is one of the two; which one depends on where the kill landed.
    expect(outcomes.every((o) => o === "none" || o === "complete")).toBe(true);
    console.warn(`copy-crash [${dialect}]: ${outcomes.join(", ")}`);
  });
});
