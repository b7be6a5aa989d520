import { describe, expect, it } from "vitest";
import { DataVersions } from "../src/runtime/storage/data-versions.ts";

describe("DataVersions: when an app's cached reads must go", () => {
  it("drops on the first sight of an app, then only for versions this instance did not make", () => {
    const versions = new DataVersions();
    expect(versions.mustDrop("a", 0)).toBe(true);
    expect(versions.mustDrop("a", 0)).toBe(false);
    versions.recordOwn("a", 1);
    versions.recordOwn("a", 2);
    expect(versions.mustDrop("a", 2)).toBe(false);
    // 3 came from another instance.
    expect(versions.mustDrop("a", 3)).toBe(true);
    expect(versions.mustDrop("a", 3)).toBe(false);
  });

  it("drops when another instance's version sits between two of its own", () => {
    const versions = new DataVersions();
    versions.mustDrop("a", 10);
    versions.recordOwn("a", 11);
    versions.recordOwn("a", 13);
    expect(versions.mustDrop("a", 13)).toBe(true);
  });

  it("keeps the caches for a call that read an older version than one already vouched for", () => {
    const versions = new DataVersions();
    versions.mustDrop("a", 5);
    expect(versions.mustDrop("a", 7)).toBe(true);
    expect(versions.mustDrop("a", 6)).toBe(false);
    // …without going back: 7 is still what the caches reflect.
    expect(versions.mustDrop("a", 7)).toBe(false);
  });

  it("keeps apps apart", () => {
    const versions = new DataVersions();
    versions.mustDrop("a", 1);
    versions.recordOwn("b", 2);
    expect(versions.mustDrop("b", 2)).toBe(true);
    expect(versions.mustDrop("a", 1)).toBe(false);
  });

  describe("with this instance's own writes in flight", () => {
    /** An own write of app "a" that commits `version` when told to (or fails). */
    function pendingWrite(versions: DataVersions, version: number) {
      let settle!: (ok: boolean) => void;
      const write = versions.ownWrite(
        "a",
        new Promise<void>((resolve, reject) => {
          settle = (ok) => {
            if (!ok) return reject(new Error("refused"));
            versions.recordOwn("a", version);
            resolve();
          };
        }),
      );
      return { write: write.catch((error: unknown) => error), settle };
    }

    it("trusts a version its write made but had not yet recorded, once the write answers", async () => {
      const versions = new DataVersions();
      versions.mustDrop("a", 4);
      const { write, settle } = pendingWrite(versions, 5);
      const decision = versions.check("a", 5);
      expect(decision).toBeInstanceOf(Promise);
      settle(true);
      expect(await decision).toBe(false);
      await write;
      // Without the wait it would have been a drop: the version was not yet known as its own.
      expect(versions.check("a", 5)).toBe(false);
    });

    it("drops at once when more versions are unexplained than writes are in flight", async () => {
      const versions = new DataVersions();
      versions.mustDrop("a", 4);
      const { write, settle } = pendingWrite(versions, 5);
      expect(versions.check("a", 6)).toBe(true);
      settle(true);
      await write;
    });

    it("drops when the write in flight fails: the version was another instance's", async () => {
      const versions = new DataVersions();
      versions.mustDrop("a", 4);
      const { write, settle } = pendingWrite(versions, 5);
      const decision = versions.check("a", 5);
      settle(false);
      expect(await decision).toBe(true);
      expect(await write).toBeInstanceOf(Error);
    });

    it("decides at once when every version is explained, writes in flight or not", () => {
      const versions = new DataVersions();
      versions.mustDrop("a", 4);
      versions.recordOwn("a", 5);
      pendingWrite(versions, 6);
      expect(versions.check("a", 5)).toBe(false);
      expect(versions.check("b", 1)).toBe(true);
    });
  });
});
