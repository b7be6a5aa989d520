import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { sql, type Transaction } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyCost, recountTotals } from "../src/runtime/index.ts";
import type { Database } from "../src/store/index.ts";
import { lockUsageRows } from "../src/store/locks.ts";
import { createUser } from "./helpers/accounts.ts";
import { openTransaction as heldOpen, untilSomeoneWaitsOnALock } from "./helpers/pg-locks.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { brickyardCli, instanceProcess, serverEnv, setUpDeployment } from "./helpers/server-process.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const KV_APP = `export const manifest = { id: "ledger", capabilities: { imports: ["svc:storage/kv@1.0"] }, routes: { put: {} } };
export default { async fetch(request, env) {
  const input = await request.json();
  await env.KV.set(input.k, input.v);
  return Response.json({ ok: true, value: true });
} };`;
const MODULE = (id: string) => `export const manifest = { id: "${id}", routes: { a: {} } };
export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };`;

/**
 * `brickyard recount` (runtime/storage/recount.ts): storage's running totals, set back to what
 * the rows hold once something that does not keep them (an instance from before migration 032
 * or 033) let them drift; the ones that match are left as they are.
 */
describeEachDialect("recounting storage's running totals", (dialect) => {
  let server: TestServer;
  let token: string;
  beforeAll(async () => {
    server = await startServer({ dialect });
    ({ token } = await createUser(server));
  });
  afterAll(async () => server.close());

  const newApp = async (name: string) => {
    const created = await server.client.post("/app", { module: MODULE(name) }, { token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  };
  /** An app holding two KV values and a blob, and two visitors' stores of one value each. */
  const filled = async (name: string) => {
    const id = await newApp(name);
    await server.ctx.storage.kvSet(id, "alpha", JSON.stringify("a".repeat(100)));
    await server.ctx.storage.kvSet(id, "beta", JSON.stringify({ n: 1 }));
    await server.ctx.storage.blobPut(id, "logo.png", Buffer.alloc(300, 7), "image/png");
    await server.ctx.visitors.commit({ appId: id, visitorId: "v1" }, [{ key: "seen", value: "true" }]);
    await server.ctx.visitors.commit({ appId: id, visitorId: "v2" }, [{ key: "name", value: JSON.stringify("Ada") }]);
    return id;
  };
  /** What the app's rows add up to, summed here from the rows themselves. */
  const rowsOf = async (id: string) => {
    const db = server.ctx.db;
    const own = [...(await db.selectFrom("app_kv").select(["key", "size"]).where("app_id", "=", id).execute()), ...(await db.selectFrom("app_blobs").select(["key", "size"]).where("app_id", "=", id).execute())];
    const visitors = await db.selectFrom("visitor_kv").select(["visitor_id", "key", "size"]).where("app_id", "=", id).execute();
    const total = (rows: readonly { key: string; size: number }[]) => ({ bytes: rows.reduce((n, r) => n + Number(r.size), 0), keyBytes: rows.reduce((n, r) => n + keyCost(r.key), 0) });
    return { own: total(own), visitors: total(visitors), v1: total(visitors.filter((r) => r.visitor_id === "v1")) };
  };
  const keptOf = async (id: string) => {
    const db = server.ctx.db;
    const usage = await db.selectFrom("app_storage_usage").select(["bytes", "key_bytes", "data_version"]).where("app_id", "=", id).executeTakeFirstOrThrow();
    const all = await db.selectFrom("visitor_totals").select(["bytes", "key_bytes"]).where("app_id", "=", id).executeTakeFirstOrThrow();
    const v1 = await db.selectFrom("visitor_stores").select(["bytes", "key_bytes"]).where("app_id", "=", id).where("visitor_id", "=", "v1").executeTakeFirst();
    const n = (row: { bytes: number; key_bytes: number } | undefined) => (row === undefined ? null : { bytes: Number(row.bytes), keyBytes: Number(row.key_bytes) });
    return { own: n(usage), visitors: n(all), v1: n(v1), version: Number(usage.data_version) };
  };

  const openTransaction = (work: (trx: Transaction<Database>) => Promise<unknown>) => heldOpen(server.ctx.db, work);

  it("sets the totals that drifted to what the rows hold, reports each, and leaves those that match alone", async () => {
    const drifted = await filled("drifted");
    const sound = await filled("sound");
    const rows = await rowsOf(drifted);
    const soundBefore = await keptOf(sound);
    expect({ own: soundBefore.own, visitors: soundBefore.visitors, v1: soundBefore.v1 }).toEqual(await rowsOf(sound));

    // As an old instance's writes would leave them: counts short and long, one store's row gone.
    await sql`update app_storage_usage set bytes = bytes + 1000, key_bytes = 7 where app_id = ${drifted}`.execute(server.ctx.db);
    await sql`update visitor_totals set bytes = 1, key_bytes = 5000 where app_id = ${drifted}`.execute(server.ctx.db);
    await sql`delete from visitor_stores where app_id = ${drifted} and visitor_id = 'v1'`.execute(server.ctx.db);

    const mended = await recountTotals(server.ctx.store);
    const mine = mended.filter((m) => m.appId === drifted);
    expect(mine).toEqual([
      { appId: drifted, visitors: false, kept: { bytes: rows.own.bytes + 1000, keyBytes: 7 }, counted: rows.own },
      { appId: drifted, visitors: true, kept: { bytes: 1, keyBytes: 5000 }, counted: rows.visitors },
    ]);
    expect(mended.map((m) => m.appId)).not.toContain(sound);
    const after = await keptOf(drifted);
    expect({ own: after.own, visitors: after.visitors, v1: after.v1 }).toEqual(rows);
    // Readers that keep what they read by the data version hear of the new total.
    expect(after.version).toBeGreaterThan(0);
    expect((await keptOf(sound)).version).toBe(soundBefore.version);

    // Nothing left to mend, and writes from here on keep the mended totals.
    expect((await recountTotals(server.ctx.store)).filter((m) => [drifted, sound].includes(m.appId))).toEqual([]);
    await server.ctx.storage.kvSet(drifted, "gamma", JSON.stringify([1, 2, 3]));
    expect((await keptOf(drifted)).own).toEqual((await rowsOf(drifted)).own);
  });

  it("recounts one app when asked to, and no other", async () => {
    const first = await filled("first");
    const second = await filled("second");
    for (const id of [first, second]) await sql`update app_storage_usage set bytes = bytes + 10 where app_id = ${id}`.execute(server.ctx.db);
    expect((await recountTotals(server.ctx.store, first)).map((m) => m.appId)).toEqual([first]);
    expect((await keptOf(second)).own?.bytes).toBe((await rowsOf(second)).own.bytes + 10);
    expect((await recountTotals(server.ctx.store, second)).map((m) => m.appId)).toEqual([second]);
  });

  it("keeps every total exact when the app is written while it recounts", async () => {
    const busy = await filled("busy");
    await sql`update app_storage_usage set bytes = bytes + 4096 where app_id = ${busy}`.execute(server.ctx.db);
    // Writes before, during and after the recount's transaction: under the app's lock, each lands
    // either before the count or after the new total.
    const writes = Array.from({ length: 40 }, (_, i) => server.ctx.storage.kvSet(busy, `k${i % 10}`, JSON.stringify("x".repeat(i * 7))));
    const recounted = recountTotals(server.ctx.store, busy);
    await Promise.all([...writes, recounted]);
    expect((await keptOf(busy)).own).toEqual((await rowsOf(busy)).own);
    expect(await recountTotals(server.ctx.store, busy)).toEqual([]);
  });

  it.skipIf(dialect !== "postgres")("skips an app deleted while it recounts others, and mends the rest", async () => {
    const first = await filled("held");
    const deleted = await filled("deleted");
    for (const id of [first, deleted]) await sql`update app_storage_usage set bytes = bytes + 1 where app_id = ${id}`.execute(server.ctx.db);
    // The recount waits on the first app's row (ids sort by creation) while the second is deleted.
    const holder = openTransaction((trx) => lockUsageRows(trx, "postgres", [first]));
    await holder.ready;
    const recounted = recountTotals(server.ctx.store);
    await untilSomeoneWaitsOnALock(server.ctx.db);
    expect((await server.client.delete(`/app/${deleted}`, { token })).status).toBe(200);
    holder.release();
    await holder.done;
    const mended = await recounted;
    expect(mended.map((m) => m.appId)).toContain(first);
    expect(mended.map((m) => m.appId)).not.toContain(deleted);
    expect((await keptOf(first)).own).toEqual((await rowsOf(first)).own);
    // No total outlives the app it counted.
    expect(await server.ctx.db.selectFrom("app_storage_usage").select("app_id").where("app_id", "=", deleted).executeTakeFirst()).toBeUndefined();
  });

  // Played step by step on PostgreSQL, where other instances write beside the recount. (SQLite
  // has one writer: its transactions cannot interleave.)
  it.skipIf(dialect !== "postgres")("waits for a write in flight as it begins, and counts it: it never sets a total from rows a writer is changing", async () => {
    const busy = await filled("in-flight");
    await sql`update app_storage_usage set bytes = bytes + 4096 where app_id = ${busy}`.execute(server.ctx.db);
    // A writer as storage writes: the app's usage row locked, the value and the total changed together.
    const writer = openTransaction(async (trx) => {
      await lockUsageRows(trx, "postgres", [busy]);
      await trx.insertInto("app_kv").values({ app_id: busy, key: "late", value: '"late"', size: 6, updated_at: Date.now() }).execute();
      await sql`update app_storage_usage set bytes = bytes + 6, key_bytes = key_bytes + ${keyCost("late")} where app_id = ${busy}`.execute(trx);
    });
    await writer.ready;
    const recounted = recountTotals(server.ctx.store, busy);
    await untilSomeoneWaitsOnALock(server.ctx.db);
    writer.release();
    await writer.done;
    const [mended] = await recounted;
    expect(mended?.counted).toEqual((await rowsOf(busy)).own);
    expect((await keptOf(busy)).own).toEqual((await rowsOf(busy)).own);
  });
});

/** The command itself, on an instance's SQLite database: what it says, and what it sets. */
describe("brickyard recount", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-recount-"));
  const env = serverEnv({ DATA_DIR: dataDir, EXECUTORS: "1" });
  const instance = instanceProcess(env);
  afterAll(async () => {
    await instance.killGroup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("refuses to run beside a live instance; stopped, it reports each total it sets, then finds nothing to set", async () => {
    const token = await setUpDeployment(env);
    await instance.start();
    const post = async (path: string, body: unknown) =>
      (await fetch(`${instance.base}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<{ id?: string }>;
    const { id } = await post("/app", { module: KV_APP });
    for (const [k, v] of [["a", "x".repeat(50)], ["b", 7]]) await post(`/app/${id}/api/put`, { k, v });
    const cli = brickyardCli(env);
    // Beside a running instance, SQLite's only writer, which keeps what each app holds in memory: refused.
    const refused = await cli("recount").then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused?.code).toBe(1);
    expect(refused?.stderr).toContain("stop it first");
    await instance.killGroup();
    const db = new SqliteDatabase(join(dataDir, "brickyard.db"));
    const bytes = () => Number((db.prepare("select bytes from app_storage_usage where app_id = ?").get(id) as { bytes: number }).bytes);
    try {
      const exact = bytes();
      db.prepare("update app_storage_usage set bytes = bytes + 999 where app_id = ?").run(id);
      const first = (await cli("recount")).stdout;
      expect(first).toContain(`app ${id}, its store: values ${exact + 999} → ${exact} bytes`);
      expect(first).toContain("1 running total set to what the rows hold");
      expect(bytes()).toBe(exact);
      expect((await cli("recount", "--app", String(id))).stdout).toContain("every running total matches its rows");
    } finally {
      db.close();
    }
  }, 60_000);
});
