import { afterAll, beforeAll, expect, it } from "vitest";
import { keyCost, recountTotals } from "../../src/runtime/index.ts";
import { createUser } from "../helpers/accounts.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// Keys are the app's: quotes and statements, multi-byte and astral characters, a key that
// looks like a number. The recount sums them in SQL (octet_length) where writes count them in
// Node (Buffer.byteLength): both must read the same bytes, and nothing of a key is ever SQL.
const KEYS = ["'; drop table app_kv; --", '" or 1=1 --', "ключ", "🔑🔑", "e\u0301", "١٢٣", "0", "%_\\"];

describeEachDialect("hostile: the recount of an app whose keys are made to break it", (dialect) => {
  let server: TestServer;
  let appId: string;
  beforeAll(async () => {
    server = await startServer({ dialect });
    const { token } = await createUser(server);
    const created = await server.client.post("/app", { module: `export const manifest = { id: "keys", routes: { a: {} } };\nexport default { async fetch() { return Response.json({ ok: true, value: 1 }); } };` }, { token });
    appId = created.body.id as string;
    for (const key of KEYS) await server.ctx.storage.kvSet(appId, key, JSON.stringify(key));
    await server.ctx.storage.blobPut(appId, KEYS[0] ?? "", Buffer.from("blob"), "text/plain");
    await server.ctx.visitors.commit({ appId, visitorId: "'; delete from visitor_stores; --" }, KEYS.map((key) => ({ key, value: JSON.stringify(key) })));
  });
  afterAll(async () => server.close());

  it("counts them as the writes did: nothing to mend, every row where it was", async () => {
    const keyBytes = KEYS.reduce((sum, key) => sum + keyCost(key), 0);
    const usage = await server.ctx.db.selectFrom("app_storage_usage").select(["key_bytes"]).where("app_id", "=", appId).executeTakeFirstOrThrow();
    expect(Number(usage.key_bytes)).toBe(keyBytes + keyCost(KEYS[0] ?? ""));
    expect(await recountTotals(server.ctx.store, appId)).toEqual([]);
    expect(await recountTotals(server.ctx.store)).toEqual([]);
    expect(await server.ctx.db.selectFrom("app_kv").select("key").where("app_id", "=", appId).execute()).toHaveLength(KEYS.length);
    expect(await server.ctx.db.selectFrom("visitor_kv").select("key").where("app_id", "=", appId).execute()).toHaveLength(KEYS.length);
  });

  it("and, their totals drifted, mends them to the same sums", async () => {
    const before = await server.ctx.db.selectFrom("visitor_totals").select(["bytes", "key_bytes"]).where("app_id", "=", appId).executeTakeFirstOrThrow();
    await server.ctx.db.updateTable("visitor_totals").set({ bytes: 0, key_bytes: 0 }).where("app_id", "=", appId).execute();
    await server.ctx.db.updateTable("visitor_stores").set({ key_bytes: 1 }).where("app_id", "=", appId).execute();
    const mended = await recountTotals(server.ctx.store, appId);
    expect(mended).toEqual([{ appId, visitors: true, kept: { bytes: 0, keyBytes: 0 }, counted: { bytes: Number(before.bytes), keyBytes: Number(before.key_bytes) } }]);
    const store = await server.ctx.db.selectFrom("visitor_stores").select(["key_bytes"]).where("app_id", "=", appId).executeTakeFirstOrThrow();
    expect(Number(store.key_bytes)).toBe(KEYS.reduce((sum, key) => sum + keyCost(key), 0));
  });
});
