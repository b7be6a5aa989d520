import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { recountTotals } from "../src/runtime/index.ts";
import { APP_CAP_BYTES, MiB } from "../src/runtime/storage/index.ts";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = (id: string) => `export const manifest = {
  id: ${JSON.stringify(id)},
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { fill: { access: "write" }, drop: { access: "write" } },
};
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    const input = await request.json();
    if (op === "fill") await env.KV.set(input.k, input.c.repeat(input.n));
    else await env.KV.delete(input.k);
    return Response.json({ ok: true, value: true });
  },
};
`;

/** A JSON string value of exactly `bytes` bytes as stored, its content told by `c`. */
const value = (c: string, bytes: number) => JSON.stringify(c.repeat(bytes - 2));

/**
 * DECISIONS §9: snapshots count against the app's storage cap. Its total counts each distinct
 * value its snapshots hold beside its live values, and every write is checked against it.
 */
describeEachDialect("snapshots and the storage cap", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  const snap = (appId: string) => server.client.post(`/app/${appId}/snapshots`, undefined, { token: owner.token });
  const fill = (appId: string, k: string, c: string, n: number) => server.client.post(`/app/${appId}/api/fill`, { k, c, n }, { token: owner.token });
  const create = async (id: string) => {
    const created = await server.client.post("/app", { module: source(id) }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  };
  /** Six values of 8 MiB, each its own content: 48 MiB. */
  const fillHalf = async (appId: string) => {
    for (let i = 0; i < 6; i++) await server.ctx.storage.kvSet(appId, `k${i}`, value(String.fromCharCode(97 + i), 8 * MiB));
  };

  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());
  beforeEach(async () => {
    owner = await makeUser(server);
  });

  it("a live write is refused once its bytes and the snapshots' together pass the cap; pruning gives the room back", async () => {
    const appId = await create("cap-app");
    await fillHalf(appId);
    expect(await server.ctx.storage.usage(appId)).toBe(48 * MiB);
    expect((await snap(appId)).status).toBe(201);
    expect(await server.ctx.storage.usage(appId)).toBe(96 * MiB);
    // 48 MiB live and 48 held: 5 MiB more would pass 100 MiB, through the op and the store alike.
    expectError(await fill(appId, "more", "z", 5 * MiB), 413, "storage_full");
    await expect(server.ctx.storage.kvSet(appId, "more", value("z", 5 * MiB))).rejects.toMatchObject({ kind: "storage_full" });
    expect((await fill(appId, "small", "z", 3 * MiB)).status).toBe(200);

    // The values deleted stay held by the snapshot.
    for (let i = 0; i < 6; i++) await server.ctx.storage.kvDelete(appId, `k${i}`);
    await server.ctx.storage.kvDelete(appId, "small");
    expect(await server.ctx.storage.usage(appId)).toBe(48 * MiB);
    // So 52 MiB more fits, to the byte, and not a byte past it.
    const kvSet = (key: string, bytes: number) => server.ctx.storage.kvSet(appId, key, value("m", bytes));
    for (let i = 0; i < 5; i++) await kvSet(`m${i}`, 10 * MiB);
    await expect(kvSet("m5", 2 * MiB + 1)).rejects.toMatchObject({ kind: "storage_full" });
    await kvSet("m5", 2 * MiB);
    expect(await server.ctx.storage.usage(appId)).toBe(100 * MiB);
    for (let i = 0; i < 6; i++) await server.ctx.storage.kvDelete(appId, `m${i}`);
    // Ten snapshots of nothing push the one that held them out: its bytes leave the total.
    for (let i = 0; i < 10; i++) expect((await snap(appId)).status).toBe(201);
    expect(await server.ctx.storage.usage(appId)).toBe(0);
    await server.ctx.storage.kvSet(appId, "more", value("z", 10 * MiB));
    expect(await recountTotals(server.ctx.store, appId)).toEqual([]);
  });

  it("a snapshot counts the values it holds even when another app's snapshot already keeps them", async () => {
    const first = await create("cap-first");
    const second = await create("cap-second");
    await fillHalf(first);
    await fillHalf(second);
    expect((await snap(first)).status).toBe(201);
    // The second app's values are stored once for both snapshots, yet each app counts them.
    expect((await snap(second)).status).toBe(201);
    expect(await server.ctx.storage.usage(second)).toBe(96 * MiB);
    expectError(await fill(second, "more", "z", 5 * MiB), 413, "storage_full");
    // A third snapshot with more live data would pass the cap: refused, and nothing of it kept.
    await server.ctx.storage.kvSet(second, "extra", value("y", 3 * MiB));
    const refused = await snap(second);
    expectError(refused, 429, "storage_limit_exceeded");
    expect((await server.client.get(`/app/${second}/snapshots`, { token: owner.token })).body.snapshots).toHaveLength(1);
    expect(await server.ctx.storage.usage(second)).toBe(99 * MiB);
    // Deleting the first app leaves the second's count as it was.
    expect((await server.client.delete(`/app/${first}`, { token: owner.token })).status).toBe(200);
    expect(await server.ctx.storage.usage(second)).toBe(99 * MiB);
    expect(await recountTotals(server.ctx.store, second)).toEqual([]);
  });

  it("a restore sets the total to the values it brings back and what the snapshots hold", async () => {
    const appId = await create("cap-restore");
    await server.ctx.storage.kvSet(appId, "a", value("a", MiB));
    const taken = await snap(appId);
    await server.ctx.storage.kvSet(appId, "a", value("b", 2 * MiB));
    await server.ctx.storage.kvSet(appId, "c", value("c", MiB));
    expect(await server.ctx.storage.usage(appId)).toBe(4 * MiB);
    const restored = await server.client.post(`/app/${appId}/versions/1/restore`, { snapshot: taken.body.snapshot.id }, { token: owner.token, headers: { "if-match": '"1"' } });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(await server.ctx.storage.usage(appId)).toBe(2 * MiB);
    expect(await recountTotals(server.ctx.store, appId)).toEqual([]);
  });

  it("a restore is never refused for the cap; snapshots of what it brought back then give the room back", async () => {
    const appId = await create("cap-over");
    // A key per letter, 9 MiB of it.
    const fillWith = async (letters: string) => {
      for (const c of letters) await server.ctx.storage.kvSet(appId, c, value(c, 9 * MiB));
    };
    await fillWith("abcde");
    const older = await snap(appId);
    expect(older.status).toBe(201);
    for (const c of "abcde") await server.ctx.storage.kvDelete(appId, c);
    await fillWith("fgh");
    expect((await snap(appId)).status).toBe(201);
    // 27 MiB live, 72 held. Back to the older one: 45 live beside the same 72, past the cap.
    const restored = await server.client.post(`/app/${appId}/versions/1/restore`, { snapshot: older.body.snapshot.id }, { token: owner.token, headers: { "if-match": '"1"' } });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(await server.ctx.storage.usage(appId)).toBe(117 * MiB);
    expect(APP_CAP_BYTES).toBeLessThan(117 * MiB);
    await expect(server.ctx.storage.kvSet(appId, "more", value("z", 100))).rejects.toMatchObject({ kind: "storage_full" });
    // Snapshots of the restored values add nothing, so they are taken, and push the others out.
    for (let i = 0; i < 10; i++) expect((await snap(appId)).status).toBe(201);
    expect(await server.ctx.storage.usage(appId)).toBe(90 * MiB);
    await server.ctx.storage.kvSet(appId, "more", value("z", MiB));
    expect(await recountTotals(server.ctx.store, appId)).toEqual([]);
  });
});
