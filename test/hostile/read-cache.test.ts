import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "../helpers/accounts.ts";
import { expectError } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { within } from "../helpers/eventually.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// Op calls keep their app's read in memory (StampedCache; on PostgreSQL while its change channel
// delivers). App code chooses how big
// its manifest is (a module may be 256 KiB), and anyone may create apps and call them: the
// cache must stay within its 32 MiB however many large apps are called, and go on working.
// (Staleness attacks on the same cache: token-cache.test.ts and read-caches-instances.test.ts.)
const MIB = 1024 * 1024;

/** A valid module of about 250 KiB whose manifest is most of it (schema descriptions). */
function heavyModule(id: string): string {
  const routes = Object.fromEntries(
    Array.from({ length: 12 }, (_, i) => [`op${i}`, { input: { type: "object", description: `${id} ${i} `.padEnd(20_800, "x") } }]),
  );
  return `export const manifest = ${JSON.stringify({ id, routes })};
export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };`;
}

describeEachDialect("hostile: the op calls' read cache under apps with huge manifests", (dialect) => {
  let server: TestServer;
  let owner: TestUser;
  let appReads = 0;
  beforeAll(async () => {
    server = await startServer({ dialect, queryLog: (event) => void (/"token_epoch"/.test(event.query.sql) && appReads++) });
    owner = await createUser(server);
    // PostgreSQL keeps reads once its change channel has delivered (PgWriteWatch).
    await within(5000, () => Promise.resolve(server.ctx.store.watch?.stamp() ?? null), (stamp) => stamp !== null);
  });
  afterAll(async () => server.close());

  it("holds at most 32 MiB after 48 apps of ~250 KiB are each called, and still serves from memory", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 48; i++) {
      const module = heavyModule(`heavy-${i}`);
      expect(module.length).toBeGreaterThan(240 * 1024);
      const created = await server.client.post("/app", { module }, { token: owner.token });
      expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(201);
      ids.push(created.body.id as string);
      // An op the app does not declare: the app is read (and kept), no isolate is built.
      expectError(await server.client.post(`/app/${created.body.id}/api/nope`, {}, { token: owner.token }), 404, "unknown_operation");
    }
    const footprint = server.ctx.apps.readCacheFootprint();
    expect(footprint).not.toBeNull();
    expect(footprint?.bytes).toBeLessThanOrEqual(32 * MIB);
    expect(footprint?.bytes).toBeGreaterThan(24 * MIB);
    expect(footprint?.values).toBeLessThan(48);
    expect(footprint?.values).toBeGreaterThan(30);
    // The newest are kept: calling them again reads nothing.
    appReads = 0;
    for (const id of ids.slice(-8)) expectError(await server.client.post(`/app/${id}/api/nope`, {}, { token: owner.token }), 404, "unknown_operation");
    expect(appReads).toBe(0);
  });
});
