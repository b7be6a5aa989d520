import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as sdk from "@aws-sdk/client-s3";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ContentObjects } from "../src/blobs/objects.ts";
import { openBlobStore } from "../src/blobs/open.ts";
import { HOUR, ManualClock } from "../src/config/clock.ts";
import { loadConfig } from "../src/config/config.ts";
import { openStore } from "../src/store/index.ts";
import { BLOB_APP } from "./fixtures/blob-app.ts";
import { createTestDatabase, describeEachDialect } from "./helpers/dialects.ts";
import { startS3, type TestS3 } from "./helpers/s3.ts";
import { instanceProcess, serverEnv, setUpDeployment, type InstanceProcess } from "./helpers/server-process.ts";

const SIZE = 128 * 1024;

/**
 * Issue 50: a server killed -9 (its whole process group, as when the machine dies) while op calls
 * write blob values to S3 loses no value it acknowledged, and leaves no object the sweep will not
 * collect: every object in the bucket has its row in blob_objects, and after a sweep an hour on,
 * every object left is one a value refers to.
 */
describeEachDialect("blob objects survive kill -9", (dialect) => {
  const PREFIX = "crash";
  let s3: TestS3;
  let dataDir: string;
  let database: { url: string; drop: () => Promise<void> } | null = null;
  let env: Record<string, string | undefined>;
  let server: InstanceProcess;
  let token: string;
  let bucket: sdk.S3Client;
  beforeAll(async () => {
    s3 = await startS3();
    dataDir = mkdtempSync(join(tmpdir(), "brickyard-objects-crash-"));
    database = dialect === "postgres" ? await createTestDatabase() : null;
    env = serverEnv({ DATA_DIR: dataDir, BLOB_STORE: s3.blobStore(PREFIX), ...(database === null ? {} : { DATABASE_URL: database.url }) });
    token = await setUpDeployment(env);
    server = instanceProcess(env);
    bucket = new sdk.S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true });
  });
  afterAll(async () => {
    bucket?.destroy();
    await server?.killGroup();
    await database?.drop();
    await s3?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const api = (path: string, body: unknown) =>
    fetch(`${server.base}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const objectKeys = async (): Promise<string[]> => {
    const page = await bucket.send(new sdk.ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${PREFIX}/objects/` }));
    return (page.Contents ?? []).map((o) => (o.Key ?? "").split("/").at(-1) ?? "");
  };

  it("loses no acknowledged value and leaves nothing the sweep will not collect", { timeout: 120_000 }, async () => {
    await server.start();
    const created = await api("/app", { module: BLOB_APP("crash-objects") });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const acknowledged = new Map<string, number>();
    let next = 0;
    let killed = false;
    // Four writers, each a new value (its own bytes, so its own object) per call, until the kill.
    const writers = Array.from({ length: 4 }, async () => {
      while (!killed) {
        const i = next++;
        try {
          const res = await api(`/app/${id}/api/put`, { k: `b${i}`, n: SIZE, fill: i % 251 });
          if (res.status === 200) acknowledged.set(`b${i}`, i % 251);
        } catch {
          // The connection died with the server: not acknowledged.
        }
      }
    });
    while (acknowledged.size < 24) await new Promise((resolve) => setTimeout(resolve, 5));
    killed = true;
    await server.killGroup();
    await Promise.all(writers);

    await server.start();
    for (const [key, fill] of acknowledged) {
      const res = await api(`/app/${id}/api/get`, { k: key });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { value: unknown }).value, key).toEqual({ size: SIZE, first: fill, last: fill });
    }
    await server.killGroup();

    // As the sweep sees it, an hour and more after the kill.
    const config = loadConfig({ ...env, PORT: "0" });
    const store = openStore({ databaseUrl: config.databaseUrl, dataDir, watch: false });
    const blobs = await openBlobStore(config.blobStore);
    try {
      const rows = new Set((await store.db.selectFrom("blob_objects").select("hash").execute()).map((r) => r.hash));
      for (const key of await objectKeys()) expect(rows.has(key), `object ${key} has a row for the sweep`).toBe(true);
      const clock = new ManualClock(Date.now() + 2 * HOUR);
      await new ContentObjects(store.db, blobs, clock, store.dialect === "sqlite").sweep();
      const referenced = new Set((await store.db.selectFrom("app_blobs").select("object_hash").where("app_id", "=", id).execute()).map((r) => r.object_hash));
      const left = await objectKeys();
      expect(left.filter((key) => !referenced.has(key))).toEqual([]);
      for (const hash of referenced) expect(left, `the object of ${String(hash)}`).toContain(hash);
      expect(left.length).toBeGreaterThanOrEqual(acknowledged.size);
    } finally {
      blobs.close();
      await store.close();
    }
  });
});
