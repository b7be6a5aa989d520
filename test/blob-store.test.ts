import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsBlobStore } from "../src/blobs/fs-store.ts";

describe("FsBlobStore", () => {
  let dir: string;
  let store: FsBlobStore;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "brickyard-blobs-"));
    store = new FsBlobStore(join(dir, "blobs"));
    writeFileSync(join(dir, "outside.txt"), "secret");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("writes, replaces, reads and deletes, leaving no temporary files", async () => {
    await store.put("assets/app-1/one", Buffer.from("first"));
    await store.put("assets/app-1/one", Buffer.from("second"));
    expect((await store.get("assets/app-1/one"))?.toString()).toBe("second");
    expect(readdirSync(join(dir, "blobs/assets/app-1"))).toEqual(["one"]);
    await store.delete("assets/app-1/one");
    await store.delete("assets/app-1/one");
    expect(await store.get("assets/app-1/one")).toBeNull();
  });

  it("removes a prefix", async () => {
    await store.put("assets/app-2/a", Buffer.from("a"));
    await store.put("assets/app-2/b", Buffer.from("b"));
    await store.put("assets/app-3/a", Buffer.from("c"));
    await store.deletePrefix("assets/app-2");
    expect(await store.get("assets/app-2/a")).toBeNull();
    expect((await store.get("assets/app-3/a"))?.toString()).toBe("c");
  });

  it("refuses keys that could leave its directory", async () => {
    for (const key of ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "", "a//b", ".", "a/./b", "a\\b", "a/\u0000"]) {
      await expect(store.get(key), key).rejects.toThrow(/refusing blob key/);
      await expect(store.put(key, Buffer.from("x")), key).rejects.toThrow(/refusing blob key/);
    }
    await expect(store.deletePrefix("..")).rejects.toThrow(/refusing blob key/);
  });
});
