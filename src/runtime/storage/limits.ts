import { sql, type RawBuilder } from "kysely";
import { apiError, recovery } from "../../errors/index.ts";

export const MiB = 1024 * 1024;
/** Spec Limits: one stored value. */
export const VALUE_CAP_BYTES = 10 * MiB;
/** Spec Limits: all of an app's KV values and blobs together. */
export const APP_CAP_BYTES = 100 * MiB;
/** DECISIONS §4: KV keys are at most 512 bytes (blob keys share the rule). */
export const KEY_CAP_BYTES = 512;
/**
 * What keeping a key costs besides its bytes (its row, and its place in the primary key's index),
 * counted against KEYS_CAP_BYTES.
 */
export const KEY_OVERHEAD_BYTES = 64;
/**
 * All of an app's keys together, each counted as `keyCost`: the values' cap (the spec's 100 MiB)
 * does not count keys, and without this an app writing 512-byte keys with 1-byte values could
 * store rows without end (a disk's worth of keys for a few MiB of values). Apart from the values'
 * cap, so 100 MiB of values still fit as the spec says; a key costs at least 65 bytes, so an app
 * holds at most ~1.6 million keys.
 */
export const KEYS_CAP_BYTES = 100 * MiB;
export const LIST_DEFAULT = 100;
export const LIST_MAX = 1000;

// A lone surrogate: half of a UTF-16 pair with no other half. Neither database stores it (both
// write U+FFFD), so two such keys would be one row while counted as two.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function checkKey(key: unknown): string {
  if (typeof key !== "string" || key.length === 0) throw apiError("invalid_request", "a storage key must be a non-empty string");
  if (LONE_SURROGATE.test(key)) throw apiError("invalid_request", "a storage key must be well-formed Unicode: it holds half of a UTF-16 surrogate pair");
  if (Buffer.byteLength(key) > KEY_CAP_BYTES) {
    throw apiError("invalid_request", `a storage key is at most ${KEY_CAP_BYTES} bytes; this one is ${Buffer.byteLength(key)}`);
  }
  return key;
}

/** The longest content type a blob may carry (a MIME type with parameters is well under it). */
export const CONTENT_TYPE_CAP = 255;
// Printable ASCII, as a header value must be; no leading space.
const CONTENT_TYPE = /^[\x21-\x7e][\x20-\x7e]*$/;

/**
 * A blob's content type is stored beside it and served as a header: it rode outside the value's
 * cap and the app's bytes, so 14 MiB of it a blob were kept and counted nowhere.
 */
export function checkContentType(contentType: unknown): string {
  if (typeof contentType !== "string" || contentType.length > CONTENT_TYPE_CAP || !CONTENT_TYPE.test(contentType)) {
    throw apiError("invalid_request", `a blob's contentType must be printable ASCII of at most ${CONTENT_TYPE_CAP} characters, a MIME type such as "image/png"`);
  }
  return contentType;
}

export function checkValueSize(size: number): void {
  if (size > VALUE_CAP_BYTES) {
    throw apiError("stored_value_too_large", `the value is ${size} bytes; one stored value is at most ${VALUE_CAP_BYTES}`, {
      recovery: recovery.shrink("payload", size, VALUE_CAP_BYTES),
    });
  }
}

/**
 * Writes committed together, as stored: the last write of each key wins, every key and value
 * checked against the caps, each with the byte length that counts against the store.
 */
export function lastWrites(writes: readonly { key: string; value: string }[]): { key: string; value: string; size: number }[] {
  const last = new Map<string, string>();
  for (const { key, value } of writes) {
    checkKey(key);
    last.delete(key);
    last.set(key, value);
  }
  const entries = [...last].map(([key, value]) => ({ key, value, size: Buffer.byteLength(value) }));
  for (const entry of entries) checkValueSize(entry.size);
  return entries;
}

/** `held`: room that leases of running ops hold (ledger.ts); a write must leave it free. */
export function storageFull(used: number, size: number, freed: number, held = 0): never {
  return overCap(used - freed + size, held, ", counting what its snapshots hold");
}

/** The same refusal for a visitor's store, which no snapshot captures. */
export function visitorStoreFull(used: number, size: number, freed: number): never {
  return overCap(used - freed + size, 0, "");
}

function overCap(after: number, held: number, counted: string): never {
  const holding = held > 0 ? ` and running operations hold ${held} more` : "";
  throw apiError("storage_full", `this write would bring the app's storage to ${after} bytes${holding}; the cap is ${APP_CAP_BYTES}${counted}. Delete or shrink keys to make room`, {
    recovery: recovery.shrink("payload", after + held, APP_CAP_BYTES),
  });
}

/**
 * Keys that start with `prefix`: substr rather than LIKE (keys may hold % and _), and both
 * dialects agree on substr, which counts characters (code points), not JavaScript's UTF-16
 * units: an emoji is one, not two.
 */
export function keyStartsWith(prefix: string): RawBuilder<boolean> {
  return sql<boolean>`substr(key, 1, ${[...prefix].length}) = ${prefix}`;
}

/** A key's cost against KEYS_CAP_BYTES. */
export function keyCost(key: string): number {
  return Buffer.byteLength(key) + KEY_OVERHEAD_BYTES;
}

/** SQL for `keyCost` of the `key` column: `octet_length` is the same function on both dialects. */
export const KEY_COST_SQL = `octet_length(key) + ${KEY_OVERHEAD_BYTES}`;

/** Refuses new keys that would bring the store's keys past `cap` (KEYS_CAP_BYTES unless a test lowers it). */
export function keysFull(keyBytes: number, adding: number, cap = KEYS_CAP_BYTES): never {
  throw apiError("storage_full", `this write's new keys would bring the app's keys to ${keyBytes + adding} bytes, counting each key's length and ${KEY_OVERHEAD_BYTES} bytes more; the keys may take ${cap}. Delete keys to make room`, {
    recovery: recovery.shrink("payload", keyBytes + adding, cap),
  });
}

export interface ListOptions {
  prefix?: string;
  limit?: number;
  cursor?: string | null;
}

export interface ListPage {
  keys: { key: string; size: number }[];
  cursor: string | null;
}

export function parseList(options: ListOptions): { prefix: string; limit: number; after: string | null } {
  const prefix = options.prefix ?? "";
  if (typeof prefix !== "string") throw apiError("invalid_request", "list prefix must be a string");
  const limit = options.limit ?? LIST_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX) throw apiError("invalid_request", `list limit must be an integer in 1..${LIST_MAX}`);
  let after: string | null = null;
  if (options.cursor !== undefined && options.cursor !== null) {
    if (typeof options.cursor !== "string") throw apiError("invalid_request", "list cursor must be a string from a previous list");
    after = Buffer.from(options.cursor, "base64url").toString("utf8");
  }
  return { prefix, limit, after };
}

/** The cursor is the last key of the page, opaque to callers. */
export function encodeCursor(lastKey: string): string {
  return Buffer.from(lastKey, "utf8").toString("base64url");
}
