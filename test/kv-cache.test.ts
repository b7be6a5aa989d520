import { describe, expect, it } from "vitest";
import { KvCache } from "../src/runtime/executor/workers/kv-cache.worker.js";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (value: Uint8Array | undefined) => (value === undefined ? undefined : new TextDecoder().decode(value));

/**
 * The supervisor's KV read cache on its own (it is plain JS, so Node loads it too). Epochs count
 * committed writes; a read reply carries the epoch Node saw before reading.
 */
describe("KV read cache rules", () => {
  it("does not cache a read that started before a write it has already heard of", () => {
    const cache = new KvCache();
    cache.invalidate("app", "k", 6);
    cache.put("app", "k", bytes("old"), 5);
    expect(cache.get("app", "k")).toBeUndefined();
    cache.put("app", "k", bytes("new"), 6);
    expect(text(cache.get("app", "k"))).toBe("new");
  });

  it("drops a cached value when a later write is heard of", () => {
    const cache = new KvCache();
    cache.put("app", "k", bytes("v1"), 3);
    cache.invalidate("app", "k", 4);
    expect(cache.get("app", "k")).toBeUndefined();
    // A reply that raced the write and arrives after it is refused too.
    cache.put("app", "k", bytes("v1"), 3);
    expect(cache.get("app", "k")).toBeUndefined();
  });

  it("keeps the newer of two replies", () => {
    const cache = new KvCache();
    cache.put("app", "k", bytes("newer"), 9);
    cache.put("app", "k", bytes("older"), 8);
    expect(text(cache.get("app", "k"))).toBe("newer");
  });

  it("remembers an evicted tombstone's epoch, so a stale reply cannot slip in after it", () => {
    const cache = new KvCache(1024, 3);
    cache.invalidate("app", "k", 10);
    for (const key of ["a", "b", "c"]) cache.put("app", key, bytes(key), 10); // evicts the tombstone
    cache.put("app", "k", bytes("stale"), 9);
    expect(cache.get("app", "k")).toBeUndefined();
    cache.put("app", "k", bytes("fresh"), 10);
    expect(text(cache.get("app", "k"))).toBe("fresh");
  });

  it("forgets everything on clear, and refuses replies older than the clear", () => {
    const cache = new KvCache();
    cache.put("app", "k", bytes("v"), 1);
    cache.clear(20);
    expect(cache.get("app", "k")).toBeUndefined();
    cache.put("app", "k", bytes("v"), 19);
    expect(cache.get("app", "k")).toBeUndefined();
  });

  it("keeps apps apart, stays within its byte budget and skips large values", () => {
    const cache = new KvCache(100, 1000);
    cache.put("a", "k", bytes("from a"), 1);
    expect(cache.get("b", "k")).toBeUndefined();
    for (let i = 0; i < 20; i++) cache.put("a", `k${i}`, bytes("0123456789"), 1);
    const kept = Array.from({ length: 20 }, (_, i) => cache.get("a", `k${i}`)).filter((v) => v !== undefined);
    expect(kept.length).toBe(10);
    cache.put("a", "big", new Uint8Array(64 * 1024 + 1), 1);
    expect(cache.get("a", "big")).toBeUndefined();
  });
});
