import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as sdk from "@aws-sdk/client-s3";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { BlobStore } from "../src/blobs/blob-store.ts";
import { FsBlobStore } from "../src/blobs/fs-store.ts";
import { openBlobStore } from "../src/blobs/open.ts";
import { BlobReadCache } from "../src/blobs/read-cache.ts";
import { MULTIPART_AT_BYTES, S3BlobStore } from "../src/blobs/s3-store.ts";
import { ConfigError, loadConfig } from "../src/config/config.ts";
import { startS3, type TestS3 } from "./helpers/s3.ts";
import { signal } from "./helpers/signal.ts";

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(() => s3.close());

/** Each store's own way of being made; every one keeps the same contract below. */
const kinds: { name: string; open: () => Promise<{ store: BlobStore; done: () => void }> }[] = [
  {
    name: "files",
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), "brickyard-blobs-"));
      return Promise.resolve({ store: new FsBlobStore(join(dir, "blobs")), done: () => rmSync(dir, { recursive: true, force: true }) });
    },
  },
  {
    name: "S3 (s3rver)",
    open: async () => {
      // A fresh prefix per test: tests share the bucket but never see each other's keys.
      const store = await openBlobStore(loadConfig({ BLOB_STORE: s3.blobStore(`run-${Math.random().toString(36).slice(2)}`) }).blobStore);
      return { store, done: () => store.close() };
    },
  },
];

describe.each(kinds)("blob store contract: $name", (kind) => {
  let store: BlobStore;
  let done: () => void;
  beforeEach(async () => {
    ({ store, done } = await kind.open());
  });
  afterEach(() => done());

  it("writes, replaces, reads and deletes; deleting what is absent is not an error", async () => {
    await store.put("assets/app-1/one", Buffer.from("first"));
    await store.put("assets/app-1/one", Buffer.from("second"));
    expect((await store.get("assets/app-1/one"))?.toString()).toBe("second");
    await store.delete("assets/app-1/one");
    await store.delete("assets/app-1/one");
    expect(await store.get("assets/app-1/one")).toBeNull();
    expect(await store.get("assets/app-1/never")).toBeNull();
  });

  it("keeps empty values and binary bytes exactly", async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await store.put("assets/app-1/bytes", bytes);
    await store.put("assets/app-1/empty", Buffer.alloc(0));
    expect((await store.get("assets/app-1/bytes"))?.equals(bytes)).toBe(true);
    expect((await store.get("assets/app-1/empty"))?.length).toBe(0);
  });

  it("removes a prefix and nothing beside it (app-2 is not app-20)", async () => {
    await store.put("assets/app-2/a", Buffer.from("a"));
    await store.put("assets/app-2/b/c", Buffer.from("b"));
    await store.put("assets/app-20/a", Buffer.from("c"));
    await store.put("assets/app-3/a", Buffer.from("d"));
    await store.deletePrefix("assets/app-2");
    expect(await store.get("assets/app-2/a")).toBeNull();
    expect(await store.get("assets/app-2/b/c")).toBeNull();
    expect((await store.get("assets/app-20/a"))?.toString()).toBe("c");
    expect((await store.get("assets/app-3/a"))?.toString()).toBe("d");
    await store.deletePrefix("assets/app-none");
  });

  it("writes a value too large for one request whole", async () => {
    const big = Buffer.alloc(MULTIPART_AT_BYTES + 1024 * 1024 + 17);
    for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
    await store.put("assets/app-4/big", big);
    expect((await store.get("assets/app-4/big"))?.equals(big)).toBe(true);
  });

  it("refuses keys that could leave its namespace", async () => {
    for (const key of ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "", "a//b", ".", "a/./b", "a\\b", "a/\u0000", "a?b", "a#b"]) {
      await expect(store.get(key), key).rejects.toThrow(/refusing blob key/);
      await expect(store.put(key, Buffer.from("x")), key).rejects.toThrow(/refusing blob key/);
      await expect(store.delete(key), key).rejects.toThrow(/refusing blob key/);
    }
    await expect(store.deletePrefix("..")).rejects.toThrow(/refusing blob key/);
  });
});

describe("FsBlobStore", () => {
  it("leaves no temporary files and nothing outside its directory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "brickyard-blobs-"));
    writeFileSync(join(dir, "outside.txt"), "secret");
    const store = new FsBlobStore(join(dir, "blobs"));
    await store.put("assets/app-1/one", Buffer.from("first"));
    await store.put("assets/app-1/one", Buffer.from("second"));
    expect(readdirSync(join(dir, "blobs/assets/app-1"))).toEqual(["one"]);
    expect(readdirSync(dir).sort()).toEqual(["blobs", "outside.txt"]);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("S3BlobStore", () => {
  /**
   * A client like the service's whose sends of `command` announce themselves (`reached`), then
   * wait for `gate`, then go on (or fail, with `fail`).
   */
  function client(command: string, gate: Promise<void>, fail = false): { client: sdk.S3Client; reached: Promise<void> } {
    const c = new sdk.S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true, requestChecksumCalculation: "WHEN_REQUIRED" });
    const reached = signal();
    c.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === command) {
          reached.fire();
          await gate;
          if (fail) throw new Error(`${command} refused by the test`);
        }
        return next(args);
      },
      { step: "initialize" },
    );
    return { client: c, reached: reached.wait };
  }
  const prefix = () => `multi-${Math.random().toString(36).slice(2)}`;

  it("shows no object of a multipart upload until it is complete, then all of it", async () => {
    const gate = signal();
    const held = client("CompleteMultipartUploadCommand", gate.wait);
    const store = new S3BlobStore(sdk, held.client, s3.bucket, prefix());
    const old = Buffer.from("the old bytes");
    await store.put("assets/app-5/v", old);
    const big = Buffer.alloc(MULTIPART_AT_BYTES + 3, 1);
    const writing = store.put("assets/app-5/v", big);
    // Every part is up once Complete is held; readers still get the old value whole.
    await held.reached;
    expect((await store.get("assets/app-5/v"))?.equals(old)).toBe(true);
    gate.fire();
    await writing;
    expect((await store.get("assets/app-5/v"))?.equals(big)).toBe(true);
    store.close();
  });

  it("aborts an upload whose part fails, leaving the old value and no new one", async () => {
    const p = prefix();
    const store = new S3BlobStore(sdk, client("UploadPartCommand", Promise.resolve(), true).client, s3.bucket, p);
    await store.put("assets/app-6/v", Buffer.from("kept"));
    await expect(store.put("assets/app-6/v", Buffer.alloc(MULTIPART_AT_BYTES, 2))).rejects.toThrow(/refused by the test/);
    await expect(store.put("assets/app-6/w", Buffer.alloc(MULTIPART_AT_BYTES, 2))).rejects.toThrow(/refused by the test/);
    expect((await store.get("assets/app-6/v"))?.toString()).toBe("kept");
    expect(await store.get("assets/app-6/w")).toBeNull();
    store.close();
  });

  it("removes a prefix of more objects than one page lists", async () => {
    const store = await openBlobStore(loadConfig({ BLOB_STORE: s3.blobStore(prefix()) }).blobStore);
    const keys = Array.from({ length: 1003 }, (_, i) => `assets/app-7/k${i}`);
    for (let i = 0; i < keys.length; i += 50) await Promise.all(keys.slice(i, i + 50).map((k) => store.put(k, Buffer.from(k))));
    await store.put("assets/app-8/k", Buffer.from("other app"));
    await store.deletePrefix("assets/app-7");
    for (const k of ["assets/app-7/k0", "assets/app-7/k999", "assets/app-7/k1002"]) expect(await store.get(k), k).toBeNull();
    expect((await store.get("assets/app-8/k"))?.toString()).toBe("other app");
    store.close();
  }, 120_000);

  it("refuses to start on a bucket that is not there, saying which", async () => {
    const config = loadConfig({ BLOB_STORE: `s3://no-such-bucket?endpoint=${encodeURIComponent(s3.endpoint)}&forcePathStyle=1` }).blobStore;
    await expect(openBlobStore(config)).rejects.toThrow(/the bucket no-such-bucket at http:\/\/127\.0\.0\.1:\d+ is not usable: it does not exist/);
  });
});

describe("BLOB_STORE", () => {
  it("reads a bucket, a prefix and the connection settings", () => {
    expect(loadConfig({ BLOB_STORE: "s3://my-bucket/a/b/?endpoint=https://s3.example.com/&region=eu-west-1&forcePathStyle=1" }).blobStore).toEqual({
      kind: "s3",
      bucket: "my-bucket",
      prefix: "a/b",
      endpoint: "https://s3.example.com",
      region: "eu-west-1",
      forcePathStyle: true,
    });
    expect(loadConfig({ BLOB_STORE: "s3://my-bucket" }).blobStore).toEqual({ kind: "s3", bucket: "my-bucket", prefix: "", endpoint: null, region: null, forcePathStyle: false });
    expect(loadConfig({ DATA_DIR: "/srv/by" }).blobStore).toEqual({ kind: "files", root: "/srv/by/blobs" });
    expect(loadConfig({ BLOB_STORE: "/mnt/blobs" }).blobStore).toEqual({ kind: "files", root: "/mnt/blobs" });
  });

  it.each([
    ["s3://Upper_Case", /names no valid bucket/],
    ["s3://ok-bucket/a%20b", /prefix of other than plain path segments/],
    ["s3://ok-bucket?endpoint=ftp://x", /endpoint must be an http\(s\) origin/],
    ["s3://ok-bucket?endpoint=https://x/path", /endpoint must be an http\(s\) origin/],
    ["s3://ok-bucket?forcePathStyle=maybe", /forcePathStyle must be 1 or 0/],
    ["s3://ok-bucket?secret=x", /unknown parameter "secret"/],
  ])("refuses %s at start", (value, message) => {
    expect(() => loadConfig({ BLOB_STORE: value })).toThrow(ConfigError);
    expect(() => loadConfig({ BLOB_STORE: value })).toThrow(message);
  });
});

describe("BlobReadCache", () => {
  it("serves repeated reads from memory, keeps within its bytes (least recently used out), never caches large values", async () => {
    const dir = mkdtempSync(join(tmpdir(), "brickyard-blobs-"));
    const store = new FsBlobStore(dir);
    const reads: string[] = [];
    const counted: BlobStore = { ...store, put: (k, d) => store.put(k, d), delete: (k) => store.delete(k), deletePrefix: (p) => store.deletePrefix(p), close: () => store.close(), get: (k) => (reads.push(k), store.get(k)) };
    const cache = new BlobReadCache(counted, 100, 250);
    for (const k of ["a", "b", "c"]) await store.put(k, Buffer.alloc(100, k));
    await store.put("big", Buffer.alloc(101));
    for (const k of ["a", "b", "a", "big", "big"]) await cache.get(k);
    expect(reads).toEqual(["a", "b", "big", "big"]);
    // c pushes out b (a was used more recently).
    await cache.get("c");
    for (const k of ["a", "c", "b"]) await cache.get(k);
    expect(reads.slice(4)).toEqual(["c", "b"]);
    cache.forget("c");
    await cache.get("c");
    expect(reads.slice(6)).toEqual(["c"]);
    expect(await cache.get("missing")).toBeNull();
    rmSync(dir, { recursive: true, force: true });
  });
});
