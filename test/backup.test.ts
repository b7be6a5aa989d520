import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { brickyardCli, instanceProcess, serverEnv, setUpDeployment } from "./helpers/server-process.ts";

const KV = `export const manifest = { id: "ledger", capabilities: { imports: ["svc:storage/kv@1.0"] }, routes: { put: {}, get: { access: "read" } } };
export default { async fetch(request, env) {
  const input = await request.json();
  if (request.headers.get("x-svc-op") === "put") { await env.KV.set(input.k, input.v); return Response.json({ ok: true, value: true }); }
  return Response.json({ ok: true, value: await env.KV.get(input.k) });
} };`;

/**
 * Issue 47: `brickyard backup <dir>` copies a running SQLite instance while it takes writes; a
 * server started on the copy serves every app and every write acknowledged before the backup
 * began, and the copy passes SQLite's integrity check.
 */
describe("backup of a running SQLite instance", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-backup-live-"));
  const target = join(mkdtempSync(join(tmpdir(), "brickyard-backup-")), "copy");
  const env = serverEnv({ DATA_DIR: dataDir, EXECUTORS: "1" });
  const live = instanceProcess(env);
  const restored = instanceProcess(serverEnv({ DATA_DIR: target, EXECUTORS: "1" }));
  afterAll(async () => {
    await live.killGroup();
    await restored.killGroup();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(join(target, ".."), { recursive: true, force: true });
  });

  it("keeps every app and every write acknowledged before it began, and the copy's database is sound", async () => {
    const token = await setUpDeployment(env);
    await live.start();
    const api = (base: string, path: string, body: unknown) =>
      fetch(`${base}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const ledger = (await (await api(live.base, "/app", { module: KV })).json()) as { id: string };

    // A writer that goes on while the backup runs: app creates and KV writes, each noted once acknowledged.
    const acknowledged: { kind: "app" | "kv"; id: string }[] = [];
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const put = await api(live.base, `/app/${ledger.id}/api/put`, { k: `k${i}`, v: i });
        if (put.status === 200) acknowledged.push({ kind: "kv", id: `k${i}` });
        if (i % 5 === 0) {
          const created = await api(live.base, "/app", { module: `export const manifest = { id: "app-${i}", routes: { a: {} } };\nexport default { async fetch() { return Response.json({ ok: true, value: ${i} }); } };` });
          if (created.status === 201) acknowledged.push({ kind: "app", id: ((await created.json()) as { id: string }).id });
        }
      }
    })();
    // Let some writes land before, and keep them landing through the backup.
    while (acknowledged.length < 30) await new Promise((resolve) => setTimeout(resolve, 10));
    // What was acknowledged as the backup began: counted, not timed (a write acknowledged in the
    // millisecond the backup began would fall on either side of a clock comparison).
    const acknowledgedBefore = acknowledged.length;
    const { stdout } = await brickyardCli(env)("backup", target);
    writing = false;
    await writer;
    expect(stdout).toContain(`into ${target}`);
    const before = acknowledged.slice(0, acknowledgedBefore);
    expect(before.length).toBeGreaterThanOrEqual(30);
    expect(acknowledged.length).toBeGreaterThan(before.length);

    const db = new Database(join(target, "brickyard.db"), { readonly: true });
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    } finally {
      db.close();
    }

    await live.killGroup();
    await restored.start();
    for (const write of before) {
      if (write.kind === "kv") {
        const got = (await (await api(restored.base, `/app/${ledger.id}/api/get`, { k: write.id })).json()) as { value: unknown };
        expect(got.value, write.id).toBe(Number(write.id.slice(1)));
      } else {
        const source = await fetch(`${restored.base}/app/${write.id}/source`, { headers: { authorization: `Bearer ${token}` } });
        expect(source.status, write.id).toBe(200);
      }
    }
  }, 120_000);

  it("on PostgreSQL says what to use instead, and fails", async () => {
    const cli = brickyardCli(serverEnv({ DATA_DIR: dataDir, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" }));
    const refused = await cli("backup", join(target, "..", "pg")).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused?.code).toBe(1);
    expect(refused?.stderr).toContain("pg_dump");
  });

  it("refuses a file, or a folder inside what it copies, before writing anything", async () => {
    const cli = brickyardCli(env);
    const refusal = (into: string) =>
      cli("backup", into).then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
    const file = join(target, "..", "a-file");
    writeFileSync(file, "not a folder");
    const onFile = await refusal(file);
    expect(onFile?.code).toBe(1);
    expect(onFile?.stderr).toContain("is a file");
    for (const inside of [join(dataDir, "copy"), join(dataDir, "blobs", "copy")]) {
      const refused = await refusal(inside);
      expect(refused?.code, inside).toBe(1);
      expect(refused?.stderr, inside).toContain("outside the data directory");
      expect(existsSync(inside), inside).toBe(false);
    }
  });
});
