import { randomUUID } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { lockUsageRows } from "../src/store/locks.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { valueRowsOf } from "./helpers/app-values.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { openTransaction, untilSomeoneWaitsOnALock } from "./helpers/pg-locks.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { signal } from "./helpers/signal.ts";

// The op writes one value at once (write-behind flushes it at its next macrotask), then waits, long
// enough for the test to delete its app on a loaded machine too, and writes another, which goes
// with its result: after the app was deleted. (The sweep test only stores values under its id.)
const LATE_WRITER = `export const manifest = { id: "late-writer", routes: { go: {} }, capabilities: { imports: ["svc:storage/kv@1.0"] } };
export default { async fetch(request, env) {
  await env.KV.set("started", true);
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await env.KV.set("late", "x".repeat(1000));
  return Response.json({ ok: true, value: "done" });
} };`;

// The same, failing at the end: its failure is recorded (activity, call counts) after the deletion.
const LATE_FAILER = LATE_WRITER.replace("late-writer", "late-failer").replace('await env.KV.set("late", "x".repeat(1000));', 'throw new Error("failed once its app was gone");');

describeEachDialect("deleting an app while its op writes", (dialect) => {
  let server: TestServer;
  let owner: TestUser;
  beforeAll(async () => {
    server = await startServer({ dialect });
    owner = await createUser(server);
  });
  afterAll(async () => server.close());

  const rowsOf = async (appId: string) => {
    const { kv, usage } = await valueRowsOf(server.ctx.db, appId);
    return { kv, usage };
  };

  /** Resolves once `check` holds, looking again each turn for up to `ms` (then the caller's assertion says what was found). */
  const until = async (check: () => Promise<boolean>, ms: number) => {
    const started = Date.now();
    while (!(await check()) && Date.now() - started < ms) await new Promise((resolve) => setImmediate(resolve));
  };

  /** Creates an app of `module`, starts its op `go`, and deletes the app once the op has written its first value. */
  const deleteWhileRunning = async (module: string) => {
    const created = await server.client.post("/app", { module }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const call = server.client.post(`/app/${id}/api/go`, {}, { token: owner.token });
    while ((await rowsOf(id)).kv === 0) await new Promise((resolve) => setImmediate(resolve));
    expect((await server.client.delete(`/app/${id}`, { token: owner.token })).status).toBe(200);
    return { id, call };
  };

  // The op's late write lands after the deletion removed its app's values; they go again once
  // the app's calls have ended (Invocations.afterCalls).
  it("leaves none of the app's values behind once its op running at the deletion has answered", async () => {
    const { id, call } = await deleteWhileRunning(LATE_WRITER);
    expect(await rowsOf(id)).toEqual({ kv: 0, usage: 0 });
    const answered = await call;
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    await until(async () => (await rowsOf(id)).kv === 0, 5_000);
    expect(await rowsOf(id)).toEqual({ kv: 0, usage: 0 });
  });

  // Its outcome is recorded once the executor answered: the rows go once the call has settled.
  it("leaves none of the app's activity or call counts behind once its op running at the deletion has failed", async () => {
    const { id, call } = await deleteWhileRunning(LATE_FAILER);
    const answered = await call;
    expect(answered.status, JSON.stringify(answered.body)).toBe(500);
    expect((answered.body.error as { kind: string }).kind).toBe("operation_failed");
    const { db } = server.ctx;
    const left = async () => {
      await server.ctx.callCounts.flush();
      const count = async (table: "activity_events" | "activity_counts" | "op_call_counts") =>
        Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as("n")).where("app_id", "=", id).executeTakeFirst())?.n ?? 0);
      return { events: await count("activity_events"), counters: await count("activity_counts"), hours: await count("op_call_counts") };
    };
    await until(async () => Object.values(await left()).every((n) => n === 0), 5_000);
    expect(await left()).toEqual({ events: 0, counters: 0, hours: 0 });
  });

  // Each kind of an app's data is dropped by a listener of its own: asset files, which no sweep
  // finds once their rows are gone, go even when another step of the deletion fails.
  it("drops the app's asset files even when another step of its deletion fails", async () => {
    const created = await server.client.post("/app", { module: LATE_WRITER.replace("late-writer", "with-assets") }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const form = new FormData();
    form.set("key", "logo.png");
    form.set("file", new Blob([new Uint8Array(64).fill(7)], { type: "image/png" }), "logo.png");
    expect((await fetch(`${server.url}/app/${id}/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${owner.token}` } })).status).toBe(201);
    const files = join(server.config.dataDir, "blobs", "assets", id);
    expect(readdirSync(files)).toHaveLength(1);
    const { pairings } = server.ctx;
    const forget = pairings.forgetApp.bind(pairings);
    pairings.forgetApp = () => Promise.reject(new Error("the store refused, as a test"));
    try {
      expect((await server.client.delete(`/app/${id}`, { token: owner.token })).status).toBe(200);
    } finally {
      pairings.forgetApp = forget;
    }
    expect(existsSync(files) ? readdirSync(files) : []).toEqual([]);
  });

  // What a crash between a late write and its removal leaves: values whose app is gone.
  it("the hourly sweep removes the values of apps that are gone, and no live app's", async () => {
    const created = await server.client.post("/app", { module: LATE_WRITER }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const live = created.body.id as string;
    const gone = randomUUID();
    await Promise.all([server.ctx.storage.kvSet(live, "kept", JSON.stringify(1)), server.ctx.storage.kvSet(gone, "left", JSON.stringify(2))]);
    expect(await server.ctx.scheduler.tick()).toContain("orphan-value-sweep");
    expect(await rowsOf(gone)).toEqual({ kv: 0, usage: 0 });
    expect(await rowsOf(live)).toEqual({ kv: 1, usage: 1 });
  });

  // Played step by step on PostgreSQL, where a writer's transaction and the deletion's interleave.
  it.skipIf(dialect !== "postgres")("drops an app's values only after a writer holding its usage row is done: no deadlock, nothing left", async () => {
    const appId = randomUUID();
    const storage = server.ctx.storage;
    await storage.kvSet(appId, "k", JSON.stringify(1));
    const [locked, proceed] = [signal(), signal()];
    // A writer as storage writes: the usage row locked, then a value changed and one added.
    const writer = openTransaction(server.ctx.db, async (trx) => {
      await lockUsageRows(trx, "postgres", [appId]);
      locked.fire();
      await proceed.wait;
      await trx.updateTable("app_kv").set({ value: "2" }).where("app_id", "=", appId).where("key", "=", "k").execute();
      await trx.insertInto("app_kv").values({ app_id: appId, key: "late", value: "3", size: 1, updated_at: Date.now() }).execute();
    });
    await locked.wait;
    const dropped = storage.dropApp(appId);
    await untilSomeoneWaitsOnALock(server.ctx.db);
    proceed.fire();
    await writer.ready;
    writer.release();
    await writer.done;
    await dropped;
    expect(await rowsOf(appId)).toEqual({ kv: 0, usage: 0 });
  });

  it.skipIf(dialect !== "postgres")("a batched write whose app's values were dropped while it waited keeps a usage row, so the sweep finds what it wrote", async () => {
    const [gone, other] = [randomUUID(), randomUUID()];
    const storage = server.ctx.storage;
    await Promise.all([storage.kvSet(gone, "seed", "1"), storage.kvSet(other, "seed", "1")]);
    const [locked, proceed] = [signal(), signal()];
    // A deletion as dropApp does it: the usage row locked first, then the values and the row gone.
    const deletion = openTransaction(server.ctx.db, async (trx) => {
      await lockUsageRows(trx, "postgres", [gone]);
      locked.fire();
      await proceed.wait;
      await trx.deleteFrom("app_kv").where("app_id", "=", gone).execute();
      await trx.deleteFrom("app_storage_usage").where("app_id", "=", gone).execute();
    });
    await locked.wait;
    // Two apps' writes in one turn: one brickyard_kv_set_many, which finds the rows there and waits to lock them.
    const writes = Promise.all([storage.kvSet(gone, "late", "2"), storage.kvSet(other, "k", "3")]);
    await untilSomeoneWaitsOnALock(server.ctx.db);
    proceed.fire();
    await deletion.ready;
    deletion.release();
    await deletion.done;
    await writes;
    expect(await rowsOf(gone)).toEqual({ kv: 1, usage: 1 });
    // Neither id is an app's: the sweep takes both.
    expect(await storage.sweepOrphans()).toBeGreaterThanOrEqual(2);
    expect(await rowsOf(gone)).toEqual({ kv: 0, usage: 0 });
  });
});
