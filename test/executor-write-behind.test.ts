import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { APP_CAP_BYTES, VALUE_CAP_BYTES } from "../src/runtime/storage/index.ts";
import { ApiError } from "../src/errors/index.ts";
import type { Store } from "../src/store/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

const KV = "svc:storage/kv@1.0";
const LOG = "svc:logging/emit@1.0";

const module = appModule({
  warm: `async (i, env) => { await env.KV.set("warm", 1); return true }`,
  // The write to "poison" fails in the store (a trigger); "after" would land in the same commit.
  poison: `async (i, env) => { await env.KV.set("poison", 1); await env.KV.set("after", 1); await env.LOG.emit("info", "went on past the write"); return "ok" }`,
  fill: `async (i, env) => { try { await env.KV.set("x", "a".repeat(i.n)); return "stored" } catch (e) { return e.kind } }`,
  // Writes, then waits on something else: the write must not wait for the op to end.
  linger: `async (i, env) => { await env.KV.set("early", 1); await new Promise((r) => setTimeout(r, i.ms)); return true }`,
  mixed: `async (i, env) => {
    await env.KV.set("k1", 1); await env.KV.set("k2", 2); await env.KV.set("k1", 3);
    const own = await env.KV.get("k1");
    const listed = (await env.KV.list({ prefix: "k" })).keys.map((k) => k.key);
    const deleted = await env.KV.delete("k2");
    return { own, listed, deleted, after: await env.KV.get("k2") };
  }`,
  big: `async (i, env) => { for (let n = 0; n < i.count; n++) await env.KV.set("big" + n, "b".repeat(i.bytes)); return true }`,
  throws: `async (i, env) => { await env.KV.set("before-throw", 1); throw new Error("after writing") }`,
});
const manifest = {
  routes: { warm: {}, poison: {}, fill: {}, linger: {}, mixed: {}, big: {}, throws: {} },
  capabilities: { imports: [KV, LOG] },
};

/** A store-level failure for one key, as a full disk or a broken database would give. */
async function poisonKey(store: Store, key: string): Promise<void> {
  if (store.dialect === "sqlite") {
    await sql.raw(`create trigger poison before insert on app_kv when new.key = '${key}' begin select raise(abort, 'disk on fire'); end`).execute(store.db);
    return;
  }
  await sql.raw(`create function poison() returns trigger as $$ begin if new.key = '${key}' then raise exception 'disk on fire'; end if; return new; end $$ language plpgsql`).execute(store.db);
  await sql.raw(`create trigger poison before insert on app_kv for each row execute function poison()`).execute(store.db);
}

/**
 * Write-behind: an op's KV writes within the room its lease holds resolve at once and commit
 * with its result. What a caller and the app can observe must match writing one by one: refusals
 * at the write, nothing answered before it commits, its own writes visible to it, order kept with
 * list and delete. On PostgreSQL the room is the one the call read with its app (the harness
 * reads it as the op route does); another instance filling it is in the hostile tests.
 */
describeEachDialect("executor: write-behind keeps every write's promise", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect });
    await poisonKey(h.store, "poison");
  });
  afterAll(async () => h.close());

  /** Publishes the app and makes one write, so its usage is known and later calls get a lease. */
  const publish = async (id: string) => {
    const app = h.code.publish(id, module, manifest);
    await h.call(app, "warm");
    return app;
  };

  it("answers nothing before the op's writes commit, and fails the op when they cannot", async () => {
    const app = await publish("wb-gate");
    const error = await h.call(app, "poison").then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(502);
    expect((error as ApiError).kind).toBe("capability_error");
    // All of the op's writes or none: "after" came later than the failed one.
    expect(await h.storage.kvGet(app.id, "poison")).toBeNull();
    expect(await h.storage.kvGet(app.id, "after")).toBeNull();
    // Written behind, the app went on past set() and its response was then replaced (written
    // one by one, set() would have thrown where it was called).
    const wentOn = h.diag.list(app.id).some((entry) => entry.message === "[info] went on past the write");
    expect(wentOn).toBe(true);
  });

  it("refuses a write at set() when the app's room is short, so the app can catch storage_full", async () => {
    const app = await publish("wb-full");
    const chunk = Buffer.alloc(VALUE_CAP_BYTES, 1);
    for (let i = 0; i < 9; i++) await h.storage.blobPut(app.id, `chunk-${i}`, chunk, "application/octet-stream", null);
    // Leave room for 100 bytes and no more.
    const used = await h.storage.usage(app.id);
    await h.storage.kvSet(app.id, "filler", JSON.stringify("f".repeat(APP_CAP_BYTES - used - 100 - 2)));
    expect(await h.storage.usage(app.id)).toBe(APP_CAP_BYTES - 100);
    expect(await h.call(app, "fill", { n: 1000 })).toBe("storage_full");
    expect(await h.call(app, "fill", { n: 50 })).toBe("stored");
    expect(await h.storage.usage(app.id)).toBe(APP_CAP_BYTES - 100 + 52);
  });

  it("commits a write while its op goes on waiting for something else", async () => {
    const app = await publish("wb-linger");
    let settled = false;
    const call = h.call(app, "linger", { ms: 3000 }).finally(() => (settled = true));
    let seenWhileRunning = false;
    while (!settled) {
      if ((await h.storage.kvGet(app.id, "early")) !== null) {
        seenWhileRunning = !settled;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await call;
    expect(seenWhileRunning).toBe(true);
  });

  it("shows an op its own writes, and keeps them in order with list and delete", async () => {
    const app = await publish("wb-mixed");
    expect(await h.call(app, "mixed")).toEqual({ own: 3, listed: ["k1", "k2"], deleted: true, after: null });
    expect(await h.storage.kvGet(app.id, "k1")).toBe("3");
    expect(await h.storage.kvGet(app.id, "k2")).toBeNull();
  });

  it("writes past the lease one by one, and keeps the usage counter exact", async () => {
    const app = await publish("wb-big");
    // 3 × 600 KiB: more than one op call's lease (1 MiB) holds.
    await h.call(app, "big", { count: 3, bytes: 600 * 1024 });
    for (let n = 0; n < 3; n++) expect((await h.storage.kvGet(app.id, `big${n}`))?.length).toBe(600 * 1024 + 2);
    const exact = await h.store.db.selectFrom("app_kv").select((eb) => eb.fn.sum<number>("size").as("n")).where("app_id", "=", app.id).executeTakeFirst();
    expect(await h.storage.usage(app.id)).toBe(Number(exact?.n ?? 0));
  });

  it("keeps the writes of an op that threw after making them", async () => {
    const app = await publish("wb-throws");
    const error = await h.call(app, "throws").then(
      () => null,
      (e: unknown) => e,
    );
    expect((error as ApiError).kind).toBe("operation_failed");
    expect(await h.storage.kvGet(app.id, "before-throw")).toBe("1");
  });

  it("checks a commit of queued writes in Node as it checks each write, whatever the isolate sends", async () => {
    // App code shares its isolate with the shim and could make it queue anything; Node decides.
    const app = await publish("wb-forged");
    const commit = async (access: "read" | "write", writes: { key: string; value: string }[] | undefined) => {
      const invocation = h.executor.invocations.mint({ appId: app.id, revision: 1, op: "warm", access, caps: new Set(["kv"]) });
      try {
        const reply = await h.executor.bindings.handle({ invocation: invocation.id, appId: app.id, path: "/kv/commit", payload: Buffer.alloc(0), ...(writes === undefined ? {} : { writes }) });
        return { status: reply.status, kind: reply.status < 300 ? null : (JSON.parse(reply.body.toString()) as { error: { kind: string } }).error.kind };
      } finally {
        h.executor.invocations.end(invocation.id);
      }
    };
    expect(await commit("read", [{ key: "sneaky", value: "1" }])).toEqual({ status: 403, kind: "forbidden_write" });
    expect(await commit("write", undefined)).toEqual({ status: 400, kind: "invalid_request" });
    expect(await commit("write", [{ key: "", value: "1" }])).toEqual({ status: 400, kind: "invalid_request" });
    expect(await commit("write", [{ key: "huge", value: "x".repeat(VALUE_CAP_BYTES + 1) }])).toEqual({ status: 413, kind: "stored_value_too_large" });
    expect(await h.storage.kvGet(app.id, "sneaky")).toBeNull();
    expect(await commit("write", [{ key: "fine", value: "1" }])).toEqual({ status: 200, kind: null });
    expect(await h.storage.kvGet(app.id, "fine")).toBe("1");
  });
});
