import { afterAll, beforeAll, expect, it } from "vitest";
import { ApiError } from "../src/errors/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

const KV = "svc:storage/kv@1.0";

describeEachDialect("executor: op calls through workerd", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect, processes: 2, secrets: { "app-secret": { API_KEY: "k-123" } } });
  });
  afterAll(async () => h.close());

  it("returns the op's value and gives the app the DECISIONS §4 request", async () => {
    const app = h.code.publish(
      "app-echo",
      appModule({
        echo: `async (input, env, req) => ({ input, url: req.url, method: req.method, op: req.headers.get("x-svc-op"), trigger: req.headers.get("x-svc-trigger"), role: req.headers.get("x-svc-role"), user: req.headers.get("x-svc-user"), inv: req.headers.get("x-svc-invocation") !== null, env: Object.keys(env) })`,
      }),
      { routes: { echo: {} } },
    );
    const value = await h.call(app, "echo", { a: 1 });
    expect(value).toEqual({ input: { a: 1 }, url: "https://app.invalid/api/echo", method: "POST", op: "echo", trigger: "http", role: "owner", user: "user-1", inv: true, env: [] });
  });

  it("persists KV across calls, processes and a restart of the pool", async () => {
    const manifest = { routes: { put: {}, get: { access: "read" as const } }, capabilities: { imports: [KV] } };
    const module = appModule({ put: `async (i, env) => { await env.KV.set(i.k, i.v); return true }`, get: `async (i, env) => env.KV.get(i.k)` });
    const apps = ["kv-a", "kv-b", "kv-c", "kv-d"].map((id) => h.code.publish(id, module, manifest));
    for (const app of apps) await h.call(app, "put", { k: "greeting", v: { hello: app.id } });
    for (const app of apps) expect(await h.call(app, "get", { k: "greeting" })).toEqual({ hello: app.id });
    await h.restart();
    for (const app of apps) expect(await h.call(app, "get", { k: "greeting" })).toEqual({ hello: app.id });
    expect(await h.call(h.code.publish("kv-e", module, manifest), "get", { k: "missing" })).toBeNull();
  });

  it("gives secrets from the SecretsSource seam as env strings", async () => {
    // A scope's first secret gives it a version (migration 019): 0 means it never had one.
    const app = { ...h.code.publish("app-secret", appModule({ key: `async (i, env) => ({ key: env.API_KEY, keys: Object.keys(env) })` }), { routes: { key: {} } }), secretsVersion: 7 };
    expect(await h.call(app, "key")).toEqual({ key: "k-123", keys: ["API_KEY"] });
    expect(h.secretReads).toContain("app-secret");
  });

  it("reads no secrets to build the isolate of an app whose secrets version is 0", async () => {
    const app = h.code.publish("app-unsecret", appModule({ keys: `async (i, env) => Object.keys(env)` }), { routes: { keys: {} } });
    expect(await h.call(app, "keys")).toEqual([]);
    expect(h.secretReads).not.toContain("app-unsecret");
    expect(h.code.loads).toBeGreaterThan(0);
  });

  it("leaves undeclared capabilities out of env and blocks fetch()", async () => {
    const app = h.code.publish(
      "app-nocaps",
      appModule({
        probe: `async (i, env) => { let fetched; try { await fetch("https://example.com/"); fetched = "reached" } catch (e) { fetched = String(e.message) } return { keys: Object.keys(env), kv: typeof env.KV, fetched } }`,
      }),
      { routes: { probe: {} }, capabilities: { imports: ["svc:logging/emit@1.0"] } },
    );
    const value = (await h.call(app, "probe")) as { keys: string[]; kv: string; fetched: string };
    expect(value.keys).toEqual(["LOG"]);
    expect(value.kv).toBe("undefined");
    // With no declared origins, every fetch is refused by the egress policy.
    expect(value.fetched).toMatch(/EgressRefused: .* is not declared in manifest.capabilities.origins/);
  });

  it("refuses a write from a read op with forbidden_write and fix_route_label", async () => {
    const app = h.code.publish(
      "app-label",
      appModule({ sneaky: `async (i, env) => { await env.KV.set("k", 1); return true }`, swallow: `async (i, env) => { try { await env.KV.set("k", 1) } catch {} return true }` }),
      { routes: { sneaky: { access: "read" as const }, swallow: { access: "read" as const } }, capabilities: { imports: [KV] } },
    );
    for (const op of ["sneaky", "swallow"]) {
      const error = await h.call(app, op).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(403);
      expect((error as ApiError).kind).toBe("forbidden_write");
      expect((error as ApiError).fields.recovery?.kind).toBe("fix_route_label");
    }
    expect(await h.storage.kvGet("app-label", "k")).toBeNull();
  });
});
