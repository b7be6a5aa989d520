import { randomFillSync } from "node:crypto";

// Random bits come from a pooled buffer: one getrandom per 512 ids rather than one each.
const POOL_IDS = 512;
const pool = Buffer.alloc(16 * POOL_IDS);
let next = POOL_IDS;

/**
 * A UUID version 7 (RFC 9562): the first 48 bits are the Unix time in milliseconds, the rest
 * (but the version and variant) random. For the keys of append-mostly tables: ids minted close
 * in time sort close together, so inserting a batch of them touches the last few pages of the
 * key's index instead of one random page each (with `randomUUID`, every delivery record dirtied
 * its own page of the `id` index, written to the WAL at each commit).
 */
export function timeOrderedUuid(now: number = Date.now()): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    next = 0;
  }
  const bytes = pool.subarray(16 * next, 16 * ++next);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | ((bytes[6] ?? 0) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
