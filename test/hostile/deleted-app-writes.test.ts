import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "../helpers/accounts.ts";
import { valueRowsOf } from "../helpers/app-values.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// Each call writes a KV value and a blob every 25 ms for 3 s, whatever happens to its app
// meanwhile: eight of them are running when the owner deletes it.
const PERSISTENT = `export const manifest = { id: "persistent", routes: { go: {} }, capabilities: { imports: ["svc:storage/kv@1.0", "svc:storage/blob@1.0"] } };
export default { async fetch(request, env) {
  const { n } = await request.json();
  for (let i = 0; i < 120; i++) {
    try {
      await env.KV.set("k" + n + "-" + i, "x".repeat(100));
      await env.BLOB.put("b" + n + "-" + i, new Uint8Array(64).fill(i), { contentType: "application/octet-stream" });
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return Response.json({ ok: true, value: n });
} };`;

/**
 * An app whose calls keep writing through its deletion: nothing of its values may outlive it
 * once its calls have answered (the deletion drops them again after its calls, context.ts), and
 * no other app's values go with them.
 */
describeEachDialect("hostile: an app that writes through its own deletion", (dialect) => {
  let server: TestServer;
  let owner: TestUser;
  beforeAll(async () => {
    server = await startServer({ dialect });
    owner = await createUser(server);
  });
  afterAll(async () => server.close());

  const rowsOf = (appId: string) => valueRowsOf(server.ctx.db, appId);

  it("leaves none of its values once its calls have answered, and a neighbour keeps its own", async () => {
    const create = async (module: string) => {
      const created = await server.client.post("/app", { module }, { token: owner.token });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.id as string;
    };
    const attacker = await create(PERSISTENT);
    const neighbour = await create(PERSISTENT.replace('id: "persistent"', 'id: "neighbour"').replace("i < 120", "i < 2"));
    expect((await server.client.post(`/app/${neighbour}/api/go`, { n: 0 }, { token: owner.token })).status).toBe(200);
    const calls = Array.from({ length: 8 }, (_, n) => server.client.post(`/app/${attacker}/api/go`, { n }, { token: owner.token }));
    while ((await rowsOf(attacker)).kv < 16) await new Promise((resolve) => setImmediate(resolve));
    expect((await server.client.delete(`/app/${attacker}`, { token: owner.token })).status).toBe(200);
    await Promise.all(calls);
    const started = Date.now();
    while ((await rowsOf(attacker)).kv + (await rowsOf(attacker)).blobs > 0 && Date.now() - started < 10_000) await new Promise((resolve) => setImmediate(resolve));
    expect(await rowsOf(attacker)).toEqual({ kv: 0, blobs: 0, usage: 0 });
    expect(await rowsOf(neighbour)).toEqual({ kv: 2, blobs: 2, usage: 1 });
    expect((await server.client.get("/healthz")).status).toBe(200);
  });
});
