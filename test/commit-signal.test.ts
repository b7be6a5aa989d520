import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CommitSignal } from "../src/store/caches/commit-signal.ts";

// Issue 20: the wal-index header tells a reader that nothing was committed since its last look,
// so it can skip asking SQLite. Only "unchanged" is trusted; these files stand in for `-shm`.

const dir = mkdtempSync(join(tmpdir(), "brickyard-commit-signal-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A wal-index whose two header copies hold `first` and `second` as their change counters. */
function walIndex(file: string, first: number, second = first): string {
  const bytes = Buffer.alloc(136);
  bytes.writeUInt32LE(first, 8);
  bytes.writeUInt32LE(second, 48 + 8);
  writeFileSync(join(dir, file), bytes);
  return join(dir, file);
}

function open(path: string): CommitSignal {
  const signal = CommitSignal.open(path);
  if (signal === null) throw new Error(`${path} did not open`);
  return signal;
}

describe("CommitSignal", () => {
  it("is null for a database without a wal-index", () => {
    expect(CommitSignal.open(join(dir, "missing-shm"))).toBeNull();
  });

  it("says unchanged only after a settle, and until the header changes", () => {
    const path = walIndex("a-shm", 1);
    const signal = open(path);
    expect(signal.unchanged()).toBe(false);
    expect(signal.unchanged()).toBe(false);
    signal.settle();
    expect(signal.unchanged()).toBe(true);
    expect(signal.unchanged()).toBe(true);
    walIndex("a-shm", 2);
    expect(signal.unchanged()).toBe(false);
    // Not settled (the caller could not ask SQLite): the new header is not trusted yet.
    expect(signal.unchanged()).toBe(false);
    signal.settle();
    expect(signal.unchanged()).toBe(true);
    signal.close();
  });

  it("trusts no header whose two copies differ (a commit under way) until it is settled whole", () => {
    const path = walIndex("b-shm", 5);
    const signal = open(path);
    signal.unchanged();
    signal.settle();
    expect(signal.unchanged()).toBe(true);
    walIndex("b-shm", 5, 6);
    expect(signal.unchanged()).toBe(false);
    signal.settle();
    expect(signal.unchanged()).toBe(false);
    // The writer finished: the header is whole again, but was never settled.
    walIndex("b-shm", 6);
    expect(signal.unchanged()).toBe(false);
    signal.settle();
    expect(signal.unchanged()).toBe(true);
    signal.close();
  });

  it("trusts no header it could not read whole", () => {
    writeFileSync(join(dir, "c-shm"), Buffer.alloc(60));
    const signal = open(join(dir, "c-shm"));
    signal.unchanged();
    signal.settle();
    expect(signal.unchanged()).toBe(false);
    signal.close();
  });
});
