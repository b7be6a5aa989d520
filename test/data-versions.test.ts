import { describe, expect, it } from "vitest";
import { DataVersions } from "../src/domain/storage/data-versions.ts";

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
});
