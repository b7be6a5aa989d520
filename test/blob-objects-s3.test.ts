import { createHash } from "node:crypto";
import * as sdk from "@aws-sdk/client-s3";
import { afterAll, beforeAll, expect, it } from "vitest";
import { HOUR, type ManualClock } from "../src/config/clock.ts";
import { BLOB_APP } from "./fixtures/blob-app.ts";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";
import { startS3, type TestS3 } from "./helpers/s3.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const sha256 = (n: number, fill: number) => createHash("sha256").update(Buffer.alloc(n, fill)).digest("hex");

/** Issue 50: with S3 as the blob store, blob values and bundles are objects there, not bytes in the database. */
describeEachDialect("blob values as objects in S3 (BLOB_STORE=s3://…, s3rver)", (dialect) => {
  const PREFIX = "tenant-o";
  let s3: TestS3;
  let server: TestServer;
  let bucket: sdk.S3Client;
  let owner: FixtureUser;
  beforeAll(async () => {
    s3 = await startS3();
    server = await startServer({ dialect, clock: "manual", env: { BLOB_STORE: s3.blobStore(PREFIX) } });
    bucket = new sdk.S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true });
    owner = await makeUser(server, "pro");
  });
  afterAll(async () => {
    bucket.destroy();
    await server?.close();
    await s3?.close();
  });

  /** Every object key under the store's objects, as S3 itself lists them. */
  const objectKeys = async (): Promise<string[]> => {
    const page = await bucket.send(new sdk.ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${PREFIX}/objects/` }));
    return (page.Contents ?? []).map((o) => o.Key ?? "").sort();
  };
  const keyOf = (hash: string) => `${PREFIX}/objects/${hash.slice(0, 2)}/${hash}`;
  const op = async (appId: string, name: string, input: unknown) => {
    const res = await server.client.post(`/app/${appId}/api/${name}`, input, { token: owner.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.value as unknown;
  };
  const create = async (name: string) => {
    const created = await server.client.post("/app", { module: BLOB_APP(name) }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  };
  const objects = () => {
    if (server.ctx.objects === null) throw new Error("an S3 blob store keeps objects");
    return server.ctx.objects;
  };

  it("puts a blob value's bytes in the bucket under its sha256, keeps only the hash in the row, and reads them back", async () => {
    const id = await create("objects-put");
    await op(id, "put", { k: "photo", n: 200 * 1024, fill: 7 });
    const hash = sha256(200 * 1024, 7);
    const row = await server.ctx.db.selectFrom("app_blobs").select(["data", "object_hash", "size"]).where("app_id", "=", id).executeTakeFirstOrThrow();
    expect([Buffer.from(row.data).length, row.object_hash, Number(row.size)]).toEqual([0, hash, 200 * 1024]);
    expect(await objectKeys()).toContain(keyOf(hash));
    expect(await op(id, "get", { k: "photo" })).toEqual({ size: 200 * 1024, first: 7, last: 7 });
    // The same bytes under another key, or in another app, are the same object.
    await op(id, "put", { k: "again", n: 200 * 1024, fill: 7 });
    expect((await objectKeys()).filter((k) => k === keyOf(hash))).toHaveLength(1);
  });

  it("a snapshot and a copy refer to the app's objects; the object goes at the sweep once its last holder is gone, not before", async () => {
    const id = await create("objects-shared");
    await op(id, "put", { k: "doc", n: 64 * 1024, fill: 9 });
    const hash = sha256(64 * 1024, 9);
    const before = await objectKeys();
    const snapshot = await server.client.post(`/app/${id}/snapshots`, undefined, { token: owner.token });
    expect(snapshot.status, JSON.stringify(snapshot.body)).toBe(201);
    const copied = await server.client.post(`/app/${id}/copy`, { manifest_id: "objects-shared-copy", include_data: true }, { token: owner.token });
    expect(copied.status, JSON.stringify(copied.body)).toBe(200);
    const copyId = copied.body.id as string;
    // No new object: the snapshot's value and the copy's row name the app's.
    expect(await objectKeys()).toEqual(before);
    const value = await server.ctx.db.selectFrom("snapshot_values").select(["data", "object_hash"]).where("hash", "=", hash).executeTakeFirstOrThrow();
    expect([Buffer.from(value.data).length, value.object_hash]).toEqual([0, hash]);
    expect(await op(copyId, "get", { k: "doc" })).toEqual({ size: 64 * 1024, first: 9, last: 9 });

    // Holders go one by one; the object stays while any is left, however old it is.
    await op(id, "del", { k: "doc" });
    expect((await server.client.delete(`/app/${copyId}`, { token: owner.token })).status).toBe(200);
    (server.clock as ManualClock).advance(2 * HOUR);
    await objects().sweep();
    expect(await objectKeys()).toContain(keyOf(hash));

    // The restore brings the blob back as a reference to the same object.
    const restored = await server.client.post(`/app/${id}/versions/1/restore`, { snapshot: snapshot.body.snapshot.id }, { token: owner.token, headers: { "if-match": '"1"' } });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(await op(id, "get", { k: "doc" })).toEqual({ size: 64 * 1024, first: 9, last: 9 });

    // The app deleted (its snapshots with it) and the snapshot values swept: nothing holds the object.
    expect((await server.client.delete(`/app/${id}`, { token: owner.token })).status).toBe(200);
    await server.ctx.snapshots.sweepValues();
    // Untouched for less than the grace period: kept (a write may be about to refer to it).
    await objects().touch(hash, 64 * 1024);
    expect(await objects().sweep()).toBe(0);
    expect(await objectKeys()).toContain(keyOf(hash));
    (server.clock as ManualClock).advance(2 * HOUR);
    expect(await objects().sweep()).toBeGreaterThanOrEqual(1);
    expect(await objectKeys()).not.toContain(keyOf(hash));
    expect(await server.ctx.db.selectFrom("blob_objects").select("hash").where("hash", "=", hash).executeTakeFirst()).toBeUndefined();
  });

  it("a KV value whose bytes a blob also holds comes back from a restore as it was (values are kept by content, whoever holds them)", async () => {
    const id = await create("objects-kv-twin");
    // The KV value 7777 is the JSON text "7777": four bytes 0x37, as the blob below.
    await op(id, "kvset", { k: "n", v: 7777 });
    await op(id, "put", { k: "twin", n: 4, fill: 0x37 });
    const snapshot = await server.client.post(`/app/${id}/snapshots`, undefined, { token: owner.token });
    expect(snapshot.status, JSON.stringify(snapshot.body)).toBe(201);
    await op(id, "kvset", { k: "n", v: 1 });
    const restored = await server.client.post(`/app/${id}/versions/1/restore`, { snapshot: snapshot.body.snapshot.id }, { token: owner.token, headers: { "if-match": '"1"' } });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(await op(id, "kvget", { k: "n" })).toBe(7777);
    expect(await op(id, "get", { k: "twin" })).toEqual({ size: 4, first: 0x37, last: 0x37 });
  });
});


const GREET = `import { greet } from "npm:greet@^1.0.0";
export const manifest = { id: "objects-greeter", routes: { run: {} } };
export default { async fetch() { return Response.json({ ok: true, value: greet("ada") }); } };`;

describeEachDialect("build bundles as objects in S3 (BLOB_STORE=s3://…, s3rver)", (dialect) => {
  const PREFIX = "tenant-b";
  let s3: TestS3;
  let registry: NpmRegistry;
  let server: TestServer;
  beforeAll(async () => {
    s3 = await startS3();
    registry = await startNpmRegistry();
    server = await startServer({ dialect, env: { BLOB_STORE: s3.blobStore(PREFIX), NPM_REGISTRY_URL: registry.url, NPM_TOKEN: "registry-secret", BUILD_RETRY_MS: "20" } });
  });
  afterAll(async () => {
    await server?.close();
    await registry?.close();
    await s3?.close();
  });

  it("keeps a build's bundle in the bucket, only its hash in the row, and runs the app from it", async () => {
    const res = await server.client.post("/app", { module: GREET });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    let status = res.body;
    for (let i = 0; i < 60 && status.state !== "published" && status.state !== "failed"; i++) {
      status = (await server.client.get(new URL(status.statusUrl as string).pathname, { token: res.body.token, headers: { prefer: "wait=5" } })).body;
    }
    expect(status.state, JSON.stringify(status)).toBe("published");
    const row = await server.ctx.db.selectFrom("build_bundles").select(["bundle", "object_hash", "size_bytes"]).executeTakeFirstOrThrow();
    expect(row.bundle).toBe("");
    expect(row.object_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(Number(row.size_bytes)).toBeGreaterThan(0);
    const bucket = new sdk.S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true });
    try {
      const stored = await bucket.send(new sdk.GetObjectCommand({ Bucket: s3.bucket, Key: `${PREFIX}/objects/${String(row.object_hash).slice(0, 2)}/${String(row.object_hash)}` }));
      expect((await stored.Body?.transformToString())?.length).toBe(Number(row.size_bytes));
    } finally {
      bucket.destroy();
    }
    const called = await server.client.post(`/app/${res.body.appId as string}/api/run`, {}, { token: res.body.token });
    expect(called.status, JSON.stringify(called.body)).toBe(200);
    expect(called.body.value).toEqual(expect.stringContaining("ada"));
  });
});
