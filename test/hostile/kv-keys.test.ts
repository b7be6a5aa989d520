import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const MODULE = `export const manifest = { id: "kv-keys", routes: { put: {}, get: { access: "read" } }, capabilities: { imports: ["svc:storage/kv@1.0"] } };
export default { async fetch(request, env) {
  const op = request.headers.get("x-svc-op");
  const input = await request.json();
  if (op === "put") { await env.KV.set(input.k, input.v); return Response.json({ ok: true, value: true }); }
  return Response.json({ ok: true, value: await env.KV.get(input.k) });
} };`;

/**
 * Keys and values an app writes reach SQL (on PostgreSQL through brickyard_kv_set, migration
 * 021) only as bound parameters: quoting, dollar quoting and statement terminators are data.
 */
describeEachDialect("hostile: KV keys and values shaped like SQL", (dialect) => {
  let server: TestServer;
  let app: { id: string; token: string };
  beforeAll(async () => {
    server = await startServer({ dialect });
    const created = await server.client.post("/app", { module: MODULE });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    app = { id: created.body.id, token: created.body.token };
  });
  afterAll(async () => server.close());

  const call = (op: string, input: Record<string, unknown>) => server.client.post(`/app/${app.id}/api/${op}`, input, { token: app.token });

  it("stores and reads back each one as written, and the table is still there", async () => {
    const cases: [string, unknown][] = [
      ["x'); drop table app_kv; --", "$$ language sql; drop function brickyard_kv_set; $$"],
      ["$$", { nested: "'); delete from app_storage_usage; --" }],
      ["é".repeat(256), "\\u0000 is not a NUL here"],
      ["; select pg_sleep(5);", ["a", 1, null]],
    ];
    for (const [k, v] of cases) expect((await call("put", { k, v })).body).toEqual({ ok: true, value: true });
    for (const [k, v] of cases) expect((await call("get", { k })).body).toEqual({ ok: true, value: v });
    // A key past the 512-byte cap is refused whatever it holds.
    // Refusals the app lets escape reach the caller as themselves: a key past the 512-byte cap, a key that is no string.
    expect(expectError(await call("put", { k: "é".repeat(257), v: 1 }), 400, "invalid_request").message).toBe("a storage key is at most 512 bytes; this one is 514");
    expect(expectError(await call("get", { k: 1 }), 400, "invalid_request").message).toBe("a storage key must be a non-empty string");
    // Half of a surrogate pair: both databases would store U+FFFD, so "\uD800" and "\uDC00" would
    // be one row counted as two keys (and the count, once wrong, stays wrong).
    for (const k of ["\uD800", "a\uDC00", "\uDC00\uD800"]) {
      expect(expectError(await call("put", { k, v: 1 }), 400, "invalid_request").message).toMatch(/well-formed Unicode/);
      expect(expectError(await call("get", { k }), 400, "invalid_request").message).toMatch(/well-formed Unicode/);
    }
    expect((await call("put", { k: "\uD83D\uDE00", v: "a whole pair is fine" })).body).toEqual({ ok: true, value: true });
  });
});
