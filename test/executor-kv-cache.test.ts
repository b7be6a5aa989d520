import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

const KV = "svc:storage/kv@1.0";
const module = appModule({
  // `ms` first, so concurrent calls pile up and the app spills onto the second process.
  get: `async (i, env) => { await new Promise((r) => setTimeout(r, i.ms ?? 0)); return { value: await env.KV.get(i.k), at: globalThis.isolateId ??= crypto.randomUUID() }; }`,
  set: `async (i, env) => { await env.KV.set(i.k, i.v); return true; }`,
  // Read, write, read again in one call: the second read must see the call's own write.
  bump: `async (i, env) => { const before = await env.KV.get(i.k); await env.KV.set(i.k, before + 1); const after = await env.KV.get(i.k); await env.KV.delete(i.k); return [before, after, await env.KV.get(i.k)]; }`,
});
const manifest = { routes: { get: { access: "read" as const }, set: {}, bump: {} }, capabilities: { imports: [KV] } };

/**
 * The KV read cache in each workerd process (SQLite stores only, where this instance is the
 * only writer): whatever was cached, a read in an op call that starts after a write was
 * answered sees that write, on every process.
 */
describe("executor: KV read cache stays coherent [sqlite]", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 2 });
  });
  afterAll(async () => h.close());

  const publish = (id: string) => ({ ...h.code.publish(id, module, manifest), plan: "enterprise" as const });
  type Read = { value: unknown; at: string };
  /** Reads from both processes at once; returns what each isolate saw. */
  const readEverywhere = async (app: ReturnType<typeof publish>, k: string): Promise<Read[]> => {
    const reads = (await Promise.all(Array.from({ length: 48 }, () => h.call(app, "get", { k, ms: 15 })))) as Read[];
    expect(new Set(reads.map((r) => r.at)).size).toBe(2);
    return reads;
  };

  it("shows a write made on one process to reads on both, and a write made outside any op", async () => {
    const app = publish("cache-both");
    await h.call(app, "set", { k: "k", v: 1 });
    for (const r of await readEverywhere(app, "k")) expect(r.value).toBe(1);
    await h.call(app, "set", { k: "k", v: 2 });
    for (const r of await readEverywhere(app, "k")) expect(r.value).toBe(2);
    // Straight through the storage layer, as a deletion or a future import would write.
    await h.storage.kvSet(app.id, "k", JSON.stringify(3));
    for (const r of await readEverywhere(app, "k")) expect(r.value).toBe(3);
    expect(await h.storage.kvDelete(app.id, "k")).toBe(true);
    for (const r of await readEverywhere(app, "k")) expect(r.value).toBeNull();
  });

  it("never keeps a value read while a write raced it", async () => {
    const app = publish("cache-race");
    for (let round = 1; round <= 15; round++) {
      // Reads in flight on both processes while the write commits.
      const racing = Promise.all(Array.from({ length: 24 }, (_, i) => h.call(app, "get", { k: "n", ms: i % 3 })));
      await h.call(app, "set", { k: "n", v: round });
      await racing;
      for (const r of await readEverywhere(app, "n")) expect(r.value).toBe(round);
    }
  });

  it("shows a call its own writes and deletes at once", async () => {
    const app = publish("cache-own");
    await h.call(app, "set", { k: "n", v: 41 });
    expect(await h.call(app, "bump", { k: "n" })).toEqual([41, 42, null]);
  });

  it("keeps apps apart in the cache", async () => {
    const a = publish("cache-a");
    const b = publish("cache-b");
    await h.call(a, "set", { k: "same", v: "a" });
    await h.call(a, "get", { k: "same" });
    expect(((await h.call(b, "get", { k: "same" })) as Read).value).toBeNull();
  });
});
