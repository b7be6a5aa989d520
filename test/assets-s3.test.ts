import * as sdk from "@aws-sdk/client-s3";
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startS3, type TestS3 } from "./helpers/s3.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const MODULE = moduleSource(manifestOf("s3-assets", ["hello"]));
const MiB = 1024 * 1024;

/** ARCHITECTURE part 4, issue 21: assets (and what builds on them: copies) in an S3 bucket. */
describeEachDialect("assets on S3 (BLOB_STORE=s3://…, s3rver)", (dialect) => {
  let s3: TestS3;
  let server: TestServer;
  let bucket: sdk.S3Client;
  const PREFIX = "tenant-a";
  beforeAll(async () => {
    s3 = await startS3();
    server = await startServer({ dialect, env: { BLOB_STORE: s3.blobStore(PREFIX) } });
    bucket = new sdk.S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true });
  });
  afterAll(async () => {
    bucket.destroy();
    await server.close();
    await s3.close();
  });

  /** Every object key in the bucket under an app's assets, as S3 itself lists them. */
  async function objectsOf(appId: string): Promise<string[]> {
    const page = await bucket.send(new sdk.ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${PREFIX}/assets/${appId}/` }));
    return (page.Contents ?? []).map((o) => o.Key ?? "");
  }

  async function upload(appId: string, token: string, key: string, data: Uint8Array, type = "image/png") {
    const form = new FormData();
    form.set("key", key);
    form.set("file", new Blob([data], { type }), "upload.bin");
    const res = await fetch(`${server.url}/app/${appId}/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as { url: string } };
  }

  it("stores, serves (our signed URL, our headers), replaces and deletes asset bytes in the bucket", async () => {
    const { id, token } = (await server.client.post("/app", { module: MODULE })).body;
    const small = new Uint8Array(1234).fill(3);
    const made = await upload(id, token, "img/logo.png", small);
    expect(made.status).toBe(201);
    const [first] = await objectsOf(id);
    expect(first).toMatch(new RegExp(`^${PREFIX}/assets/${id}/[0-9a-f]{24}$`));

    const served = await fetch(made.body.url);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-security-policy")).toContain("sandbox");
    expect(served.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(small))).toBe(true);

    // 9 MiB goes up in parts; the replaced object is removed once the row points at the new one.
    const large = new Uint8Array(9 * MiB);
    for (let i = 0; i < large.length; i += 997) large[i] = i % 256;
    expect((await upload(id, token, "img/logo.png", large)).status).toBe(201);
    const objects = await objectsOf(id);
    expect(objects).toHaveLength(1);
    expect(objects[0]).not.toBe(first);
    const again = await fetch(`${server.url}/app/${id}/assets/img/logo.png`, { headers: { authorization: `Bearer ${token}` } });
    expect(Buffer.from(await again.arrayBuffer()).equals(Buffer.from(large))).toBe(true);

    expect((await server.client.delete(`/app/${id}/assets/img/logo.png`, { token })).body).toEqual({ ok: true });
    expect(await objectsOf(id)).toEqual([]);
    expectError(await server.client.get(`/app/${id}/assets/img/logo.png`, { token }), 404, "not_found");
  });

  it("a copy with data writes its own objects; deleting an app removes only its objects", async () => {
    const owner = await makeUser(server);
    const source = (await server.client.post("/app", { module: MODULE }, { token: owner.token })).body.id;
    expect((await upload(source, owner.token, "a.png", new Uint8Array(10).fill(1))).status).toBe(201);
    expect((await upload(source, owner.token, "b/c.txt", new TextEncoder().encode("text"), "text/plain")).status).toBe(201);
    const copy = await server.client.post(`/app/${source}/copy`, { manifest_id: "s3-assets-copy", include_data: true }, { token: owner.token });
    expect(copy.body).toMatchObject({ ok: true, copiedData: { assets: 2 } });
    const copied = copy.body.id as string;
    expect(await objectsOf(copied)).toHaveLength(2);

    expect((await server.client.delete(`/app/${source}`, { token: owner.token })).status).toBe(200);
    expect(await objectsOf(source)).toEqual([]);
    const kept = await fetch(`${server.url}/app/${copied}/assets/b/c.txt`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(await kept.text()).toBe("text");
  });

  it("a server whose bucket is missing does not start, and says why", async () => {
    await expect(startServer({ dialect, env: { BLOB_STORE: `s3://missing-bucket?endpoint=${encodeURIComponent(s3.endpoint)}&forcePathStyle=1` } })).rejects.toThrow(
      /BLOB_STORE: the bucket missing-bucket at .* is not usable: it does not exist/,
    );
  });
});
