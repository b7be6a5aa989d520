import { request } from "undici";
import { Agent } from "undici";
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemClock } from "../src/config/clock.ts";
import { APP_CAP_BYTES, AppStorage, MiB, VALUE_CAP_BYTES } from "../src/runtime/storage/index.ts";
import { ApiError } from "../src/errors/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { appModule, exactUsage, startHarness, type Harness } from "./helpers/executor.ts";

const KV = "svc:storage/kv@1.0";
const BLOB = "svc:storage/blob@1.0";

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}


describeEachDialect("app storage: caps, atomicity, isolation", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect });
  });
  afterAll(async () => h.close());

  const storeApp = (id: string) =>
    h.code.publish(
      id,
      appModule({
        put: `async (i, env) => { await env.KV.set(i.k, "x".repeat(i.n)); return true }`,
        get: `async (i, env) => env.KV.get(i.k)`,
        list: `async (i, env) => env.KV.list(i)`,
        del: `async (i, env) => env.KV.delete(i.k)`,
        blob: `async (i, env) => { await env.BLOB.put(i.k, new Uint8Array(i.n).fill(7), { contentType: "image/png" }); const b = await env.BLOB.get(i.k); const l = await env.BLOB.list({}); return { size: b.size, type: b.contentType, first: new Uint8Array(b.data)[0], keys: l.keys, none: await env.BLOB.get("nope") } }`,
      }),
      { routes: { put: {}, get: { access: "read" }, list: { access: "read" }, del: {}, blob: {} }, capabilities: { imports: [KV, BLOB] } },
    );

  it("refuses a value of 10 MiB + 1 byte with stored_value_too_large; 10 MiB exactly fits", async () => {
    const app = storeApp("cap-value");
    // A JSON string of n characters serializes to n + 2 bytes.
    const error = await refusal(h.call(app, "put", { k: "big", n: VALUE_CAP_BYTES - 1 }));
    expect(error.status).toBe(413);
    expect(error.kind).toBe("stored_value_too_large");
    expect(error.fields.recovery?.kind).toBe("shrink");
    await h.call(app, "put", { k: "big", n: VALUE_CAP_BYTES - 2 });
    expect(await h.storage.usage("cap-value")).toBe(VALUE_CAP_BYTES);
  });

  it("lists keys with prefix, limit and cursor, and round-trips blobs", async () => {
    const app = storeApp("cap-list");
    for (const k of ["a/1", "a/2", "a/3", "b/1"]) await h.call(app, "put", { k, n: 1 });
    const first = (await h.call(app, "list", { prefix: "a/", limit: 2 })) as { keys: { key: string; size: number }[]; cursor: string };
    expect(first.keys).toEqual([{ key: "a/1", size: 3 }, { key: "a/2", size: 3 }]);
    const second = (await h.call(app, "list", { prefix: "a/", limit: 2, cursor: first.cursor })) as { keys: { key: string }[]; cursor: string | null };
    expect(second.keys.map((k) => k.key)).toEqual(["a/3"]);
    expect(second.cursor).toBeNull();
    // A prefix outside the BMP: SQL counts it one character, JavaScript's length two.
    for (const k of ["😀a", "😀b", "x😀"]) await h.call(app, "put", { k, n: 1 });
    expect(((await h.call(app, "list", { prefix: "😀" })) as { keys: { key: string }[] }).keys.map((k) => k.key)).toEqual(["😀a", "😀b"]);
    expect(await h.call(app, "del", { k: "a/1" })).toBe(true);
    expect(await h.call(app, "blob", { k: "pic", n: 1000 })).toEqual({ size: 1000, type: "image/png", first: 7, keys: [{ key: "pic", size: 1000 }], none: null });
    expect(await h.storage.usage("cap-list")).toBe(await exactUsage(h, "cap-list"));
  });

  it("fills to 100 MiB, refuses the next byte with storage_full, and deleting makes room", async () => {
    const appId = "cap-full";
    const chunk = Buffer.alloc(VALUE_CAP_BYTES, 1);
    for (let i = 0; i < 10; i++) await h.storage.blobPut(appId, `chunk-${i}`, chunk, "application/octet-stream");
    expect(await h.storage.usage(appId)).toBe(APP_CAP_BYTES);
    const error = await refusal(h.storage.kvSet(appId, "one-more", "1"));
    expect(error.status).toBe(413);
    expect(error.kind).toBe("storage_full");
    // Replacing a value counts only the difference.
    await h.storage.blobPut(appId, "chunk-0", Buffer.alloc(VALUE_CAP_BYTES - 10, 2), "application/octet-stream");
    await h.storage.kvSet(appId, "one-more", "1");
    expect(await h.storage.blobDelete(appId, "chunk-1")).toBe(true);
    await h.storage.kvSet(appId, "after-delete", JSON.stringify("y".repeat(MiB)));
    expect(await h.storage.usage(appId)).toBe(await exactUsage(h, appId));

    // Through workerd the same refusal reaches the caller.
    const app = storeApp(appId);
    const viaApp = await refusal(h.call(app, "put", { k: "huge", n: VALUE_CAP_BYTES - 2 }));
    expect(viaApp.kind).toBe("storage_full");
  });

  it("never lets concurrent writes pass the app cap, and the counter stays exact", async () => {
    const appId = "cap-race";
    const chunk = Buffer.alloc(VALUE_CAP_BYTES, 3);
    const results = await Promise.allSettled(Array.from({ length: 14 }, (_, i) => h.storage.blobPut(appId, `k${i}`, chunk, "application/octet-stream")));
    const kinds = results.map((r) => (r.status === "fulfilled" ? "ok" : (r.reason as ApiError).kind));
    expect(kinds.filter((k) => k === "ok")).toHaveLength(10);
    expect(kinds.filter((k) => k === "storage_full")).toHaveLength(4);
    expect(await h.storage.usage(appId)).toBe(APP_CAP_BYTES);
    expect(await exactUsage(h, appId)).toBe(APP_CAP_BYTES);
    // Concurrent replace and delete keep the counter exact too (the small writes may or may not
    // find room, depending on whether the deletes commit first).
    await Promise.allSettled([
      h.storage.blobDelete(appId, "k0"),
      h.storage.blobDelete(appId, "k1"),
      h.storage.kvSet(appId, "small", "1"),
      h.storage.blobPut(appId, "k2", Buffer.alloc(5), "text/plain"),
    ]);
    expect(await h.storage.usage(appId)).toBe(await exactUsage(h, appId));
  });

  it("commits several writes as one: the last of a key wins, and a refused one applies none", async () => {
    const appId = "commit-many";
    await h.storage.kvCommit(appId, [{ key: "a", value: "1" }, { key: "b", value: '"two"' }, { key: "a", value: "333" }], null);
    expect(await h.storage.kvGet(appId, "a")).toBe("333");
    expect(await h.storage.kvGet(appId, "b")).toBe('"two"');
    expect(await h.storage.usage(appId)).toBe(3 + 5);
    const error = await refusal(h.storage.kvCommit(appId, [{ key: "c", value: "1" }, { key: "d", value: "x".repeat(VALUE_CAP_BYTES + 1) }], null));
    expect(error.kind).toBe("stored_value_too_large");
    expect(await h.storage.kvGet(appId, "c")).toBeNull();
    expect(await h.storage.usage(appId)).toBe(await exactUsage(h, appId));
  });

  it("holds a lease's room against every other write of this instance until it is released", async () => {
    const appId = "lease-room";
    // PostgreSQL: the usage an op call reads with its app row; SQLite learns it from its own writes.
    const seen = async () => {
      if (dialect === "sqlite") return undefined;
      const { storedBytes, dataVersion } = await h.usageOf(appId);
      return { used: storedBytes, version: dataVersion };
    };
    const chunk = Buffer.alloc(VALUE_CAP_BYTES, 4);
    for (let i = 0; i < 9; i++) await h.storage.blobPut(appId, `chunk-${i}`, chunk, "application/octet-stream");
    const room = APP_CAP_BYTES - (await h.storage.usage(appId));
    if (dialect === "postgres") expect(h.storage.lease(appId, MiB)).toBeNull();
    const lease = h.storage.lease(appId, MiB, await seen());
    expect(lease?.remaining).toBe(MiB);
    // Another op's write may not take the held room...
    const blocked = await refusal(h.storage.kvSet(appId, "other", JSON.stringify("o".repeat(room - MiB + 10)), null));
    expect(blocked.kind).toBe("storage_full");
    await h.storage.kvSet(appId, "other", JSON.stringify("o".repeat(room - MiB - 2)), null);
    // ...and no second lease is granted beyond what is left.
    expect(h.storage.lease(appId, MiB, await seen())).toBeNull();
    // The holder's own writes fit, and count against its lease.
    await h.storage.kvCommit(appId, [{ key: "mine", value: JSON.stringify("m".repeat(MiB - 2)) }], lease);
    expect(lease?.remaining).toBe(0);
    expect(await h.storage.usage(appId)).toBe(APP_CAP_BYTES);
    lease?.release();
    // Released and deleted from: the room is there for the next lease.
    expect(await h.storage.kvDelete(appId, "mine")).toBe(true);
    const next = h.storage.lease(appId, MiB, await seen());
    expect(next?.remaining).toBe(MiB);
    next?.release();
    // PostgreSQL: a reading older than one already seen changes nothing (it claims an empty app).
    if (dialect === "postgres") expect(h.storage.lease(appId, 50 * MiB, { used: 0, version: 1 })?.remaining).toBe(MiB);
  });

  it("never lets concurrent KV writes from two instances pass the app cap (one statement each on PostgreSQL)", async () => {
    const appId = "kv-race";
    const other = new AppStorage(h.store, systemClock);
    for (let i = 0; i < 9; i++) await h.storage.blobPut(appId, `base-${i}`, Buffer.alloc(VALUE_CAP_BYTES, 4), "application/octet-stream");
    // Room for exactly ten values of 1 MiB; fourteen race for it, half through each instance.
    const value = JSON.stringify("x".repeat(MiB - 2));
    const results = await Promise.allSettled(Array.from({ length: 14 }, (_, i) => (i % 2 === 0 ? h.storage : other).kvSet(appId, `v${i}`, value)));
    const kinds = results.map((r) => (r.status === "fulfilled" ? "ok" : (r.reason as ApiError).kind));
    expect(kinds.filter((k) => k === "ok")).toHaveLength(10);
    expect(kinds.filter((k) => k === "storage_full")).toHaveLength(4);
    expect(await h.storage.usage(appId)).toBe(APP_CAP_BYTES);
    expect(await exactUsage(h, appId)).toBe(APP_CAP_BYTES);
    const refused = results.find((r) => r.status === "rejected")?.reason as ApiError;
    expect([refused.status, refused.message]).toEqual([413, `this write would bring the app's storage to ${APP_CAP_BYTES + MiB} bytes; the cap is ${APP_CAP_BYTES}, counting what its snapshots hold. Delete or shrink keys to make room`]);
    // An overwrite of the same size fits however full the app is; a smaller one frees room.
    const first = kinds.indexOf("ok");
    await h.storage.kvSet(appId, `v${first}`, value);
    await other.kvSet(appId, `v${first}`, "1");
    expect(await exactUsage(h, appId)).toBe(APP_CAP_BYTES - MiB + 1);
    expect(await h.storage.usage(appId)).toBe(APP_CAP_BYTES - MiB + 1);
  });

  it("takes writes from two instances, to the same apps in opposite orders, without a deadlock", async () => {
    // A second AppStorage on the same store is a second instance's write batcher: its batches
    // lock the apps' usage rows in the same sorted order, so neither waits on the other forever.
    const other = new AppStorage(h.store, systemClock);
    const apps = ["order-a", "order-b", "order-c"];
    const writes = (storage: AppStorage, order: string[], tag: string) =>
      Array.from({ length: 30 }, (_, i) => storage.kvSet(order[i % order.length] ?? "", `${tag}-${i}`, JSON.stringify("v".repeat(i))));
    const results = await Promise.allSettled([...writes(h.storage, apps, "one"), ...writes(other, [...apps].reverse(), "two")]);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    for (const appId of apps) expect(await h.storage.usage(appId)).toBe(await exactUsage(h, appId));
  });

  it("keeps each app's KV its own: same key, forged, finished and misattributed invocations", async () => {
    const a = storeApp("iso-a");
    const b = storeApp("iso-b");
    await h.call(a, "put", { k: "secret", n: 5 });
    expect(await h.call(b, "get", { k: "secret" })).toBeNull();
    const snoop = h.code.publish(
      "iso-snoop",
      appModule({
        snoop: `async (i, env, req) => { const out = {}; try { const r = await fetch("http://internal/kv/get", { method: "POST", headers: { "x-svc-invocation": req.headers.get("x-svc-invocation") }, body: JSON.stringify({ key: "secret", appId: "iso-a" }) }); out.fetch = await r.text() } catch (e) { out.fetch = "blocked" } out.kv = await env.KV.get("secret"); out.globals = Object.keys(globalThis).filter((k) => /internal|loader|env/i.test(k)); return out }`,
      }),
      { routes: { snoop: {} }, capabilities: { imports: [KV] } },
    );
    expect(await h.call(snoop, "snoop")).toEqual({ fetch: "blocked", kv: null, globals: [] });

    // Straight at the Node side of the bindings, as the supervisor would call it: no invocation,
    // a made-up one, one that ended, and a live one claimed by another app's isolate.
    const ask = async (invocation: string, appId = "iso-b") => {
      const reply = await h.executor.bindings.handle({ invocation, appId, path: "/kv/get", key: "secret", payload: Buffer.alloc(0) });
      return { status: reply.status, body: reply.body.toString() };
    };
    expect((await ask("")).status).toBe(403);
    expect((await ask("made-up-invocation-id")).status).toBe(403);
    const live = h.executor.invocations.mint({ appId: "iso-b", revision: 1, op: "get", access: "read", caps: new Set(["kv"]) });
    expect(await ask(live.id)).toEqual({ status: 200, body: "" });
    expect(await ask(live.id, "iso-a")).toEqual({ status: 403, body: expect.stringContaining('"forbidden"') as unknown });
    h.executor.invocations.end(live.id);
    expect((await ask(live.id)).status).toBe(403);
    const noCaps = h.executor.invocations.mint({ appId: "iso-a", revision: 1, op: "get", access: "read", caps: new Set() });
    const denied = await ask(noCaps.id, "iso-a");
    expect(denied.status).toBe(403);
    expect((JSON.parse(denied.body) as { error: { kind: string } }).error.kind).toBe("capability_denied");
    h.executor.invocations.end(noCaps.id);

    // The internal API's HTTP listener serves no bindings at all, whatever it is handed.
    const agent = new Agent({ connect: { socketPath: h.executor.internalSocketPath } });
    try {
      const other = h.executor.invocations.mint({ appId: "iso-a", revision: 1, op: "get", access: "read", caps: new Set(["kv"]) });
      const res = await request("http://internal/kv/get", { dispatcher: agent, method: "POST", headers: { "x-svc-invocation": other.id }, body: JSON.stringify({ key: "secret" }) });
      expect(res.statusCode).toBe(404);
      expect(((await res.body.json()) as { error: { kind: string } }).error.kind).toBe("not_found");
      h.executor.invocations.end(other.id);
    } finally {
      await agent.close();
    }
  });
});
