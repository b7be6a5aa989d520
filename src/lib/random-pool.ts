import { randomFillSync } from "node:crypto";

// Refilled by one crypto call per 4 KiB (as crypto.randomUUID does), not one per token or
// invocation id: under load those calls cost more than the rest of minting.
const pool = Buffer.alloc(4096);
let offset = pool.length;

/** `n` bytes from the system CSPRNG, each handed out once. */
export function pooledRandomBytes(n: number): Buffer {
  if (n > pool.length) return randomFillSync(Buffer.alloc(n));
  if (offset + n > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = Buffer.from(pool.subarray(offset, offset + n));
  // What was handed out does not stay behind in the pool.
  pool.fill(0, offset, offset + n);
  offset += n;
  return bytes;
}
