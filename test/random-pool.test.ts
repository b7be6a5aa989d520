import { expect, it } from "vitest";
import { pooledRandomBytes } from "../src/lib/random-pool.ts";

it("hands out each random byte once, across refills and for requests larger than the pool", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    const bytes = pooledRandomBytes(86);
    expect(bytes).toHaveLength(86);
    seen.add(bytes.toString("hex"));
  }
  expect(seen.size).toBe(1000);
  const big = pooledRandomBytes(10_000);
  expect(big).toHaveLength(10_000);
  // Not a zero-filled buffer: at most a few of 10,000 random bytes are zero.
  expect(big.filter((b) => b === 0).length).toBeLessThan(200);
});
