import { afterAll, beforeAll, expect, it } from "vitest";
import { HOUR, type ManualClock } from "../../src/config/clock.ts";
import { APP_CAP_BYTES } from "../../src/runtime/index.ts";
import { BLOB_APP } from "../fixtures/blob-app.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startS3, type TestS3 } from "../helpers/s3.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// With S3 as the blob store, equal bytes are one object whoever wrote them (blobs/objects.ts).
// An attacker who learns (or guesses) a victim's bytes can make the same object its own: deleting
// its copy, or its whole app, must leave the victim's value whole, and nothing of the attacker's
// may name an object by hash, only by writing the bytes.
describeEachDialect("hostile: shared blob objects", (dialect) => {
  let s3: TestS3;
  let server: TestServer;
  beforeAll(async () => {
    s3 = await startS3();
    server = await startServer({ dialect, clock: "manual", env: { BLOB_STORE: s3.blobStore("hostile") } });
  });
  afterAll(async () => {
    await server?.close();
    await s3?.close();
  });

  const app = async (name: string) => {
    const created = await server.client.post("/app", { module: BLOB_APP(name) });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; token: string };
  };
  const op = async (a: { id: string; token: string }, name: string, input: unknown) => {
    const res = await server.client.post(`/app/${a.id}/api/${name}`, input, { token: a.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.value as unknown;
  };

  it("an attacker writing the victim's bytes, then deleting them and all its values, leaves the victim's value whole through the sweep", async () => {
    const victim = await app("victim-blobs");
    const attacker = await app("attacker-blobs");
    await op(victim, "put", { k: "secret-plan", n: 4096, fill: 42 });
    await op(attacker, "put", { k: "same", n: 4096, fill: 42 });
    const hashes = await server.ctx.db.selectFrom("app_blobs").select("object_hash").where("app_id", "in", [victim.id, attacker.id]).execute();
    expect(new Set(hashes.map((h) => h.object_hash)).size).toBe(1);

    await op(attacker, "del", { k: "same" });
    await op(attacker, "put", { k: "same", n: 4096, fill: 42 });
    // All of the attacker's values go, as when its anonymous app is reaped.
    await server.ctx.storage.dropApp(attacker.id);
    (server.clock as ManualClock).advance(2 * HOUR);
    await server.ctx.objects?.sweep();
    expect(await op(victim, "get", { k: "secret-plan" })).toEqual({ size: 4096, first: 42, last: 42 });
  });

  it("a blob key shaped like an object's key stays a key of the app's own, never a path into the store", async () => {
    const a = await app("path-blobs");
    const victim = await app("victim-path");
    await op(victim, "put", { k: "v", n: 16, fill: 1 });
    const [row] = await server.ctx.db.selectFrom("app_blobs").select("object_hash").where("app_id", "=", victim.id).execute();
    const hash = String(row?.object_hash);
    for (const k of [`objects/${hash.slice(0, 2)}/${hash}`, `../objects/${hash.slice(0, 2)}/${hash}`, hash]) {
      expect(await op(a, "get", { k }), k).toBeNull();
    }
  });

  it("an app at its cap cannot make the server upload bytes the cap refuses", async () => {
    const a = await app("full-blobs");
    await op(a, "put", { k: "first", n: 16, fill: 3 });
    // As full as 100 MiB of values would make it, without uploading them here.
    await server.ctx.db.updateTable("app_storage_usage").set({ bytes: APP_CAP_BYTES - 100 }).where("app_id", "=", a.id).execute();
    const before = await server.ctx.db.selectFrom("blob_objects").select("hash").execute();
    const refused = await server.client.post(`/app/${a.id}/api/put`, { k: "more", n: 4096, fill: 5 }, { token: a.token });
    expect([refused.status, refused.body.error?.kind]).toEqual([413, "storage_full"]);
    expect(await server.ctx.db.selectFrom("blob_objects").select("hash").execute()).toEqual(before);
  });
});
