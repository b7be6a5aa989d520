import * as sdk from "@aws-sdk/client-s3";
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, manifestOf, moduleSource } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startS3, type TestS3 } from "../helpers/s3.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const MODULE = moduleSource(manifestOf("blob-target", ["hello"]));

/**
 * The S3 blob store, attacked through asset keys: what an agent names never becomes an object
 * name, so S3 syntax in a key cannot reach another app's objects, or outside the prefix.
 */
describeEachDialect("hostile: assets on S3", (dialect) => {
  let s3: TestS3;
  let server: TestServer;
  let bucket: sdk.S3Client;
  beforeAll(async () => {
    s3 = await startS3();
    server = await startServer({ dialect, env: { BLOB_STORE: s3.blobStore("tenant") } });
    bucket = new sdk.S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true });
  });
  afterAll(async () => {
    bucket.destroy();
    await server.close();
    await s3.close();
  });

  const upload = async (appId: string, token: string, key: string) => {
    const form = new FormData();
    form.set("key", key);
    form.set("file", new Blob([new TextEncoder().encode(`bytes of ${key}`)], { type: "text/plain" }), "f.txt");
    const res = await fetch(`${server.url}/app/${appId}/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, headers: res.headers, body: await res.json(), text: "" };
  };

  it("keys shaped as S3 syntax are refused or stay names; objects are only ever prefix/assets/<app>/<random>", async () => {
    const victim = (await server.client.post("/app", { module: MODULE })).body;
    const attacker = (await server.client.post("/app", { module: MODULE })).body;
    expect((await upload(victim.id, victim.token, "secret.txt")).status).toBe(201);
    for (const key of [`../${victim.id}/secret.txt`, "a?delete", "a?x-id=DeleteObjects", "%2e%2e/x", "a#b", "..", `assets/../../${victim.id}`, "a b", "é"]) {
      expectError(await upload(attacker.id, attacker.token, key), 400, "asset_invalid_key");
    }
    // Allowed keys that look like paths into the store are only row names.
    for (const key of [`assets/${victim.id}/secret.txt`, `tenant/assets/${victim.id}/x`, "x-.-/_"]) {
      expect((await upload(attacker.id, attacker.token, key)).status).toBe(201);
    }
    const listed = await bucket.send(new sdk.ListObjectsV2Command({ Bucket: s3.bucket }));
    const names = (listed.Contents ?? []).map((o) => o.Key ?? "");
    expect(names).toHaveLength(4);
    for (const name of names) expect(name).toMatch(new RegExp(`^tenant/assets/(${victim.id}|${attacker.id})/[0-9a-f]{24}$`));

    // The attacker's asset named like the victim's path serves the attacker's bytes only.
    const own = await fetch(`${server.url}/app/${attacker.id}/assets/assets/${victim.id}/secret.txt`, { headers: { authorization: `Bearer ${attacker.token}` } });
    expect(await own.text()).toBe(`bytes of assets/${victim.id}/secret.txt`);
    expectError(await server.client.get(`/app/${victim.id}/assets/secret.txt`, { token: attacker.token }), 403, "forbidden");
    expectError(await server.client.delete(`/app/${victim.id}/assets/secret.txt`, { token: attacker.token }), 403, "forbidden");
    const victimOwn = await fetch(`${server.url}/app/${victim.id}/assets/secret.txt`, { headers: { authorization: `Bearer ${victim.token}` } });
    expect(await victimOwn.text()).toBe("bytes of secret.txt");
  });
});
