import { apiError, recovery } from "../../errors/index.ts";

export const MiB = 1024 * 1024;
/** Spec Limits: one stored value. */
export const VALUE_CAP_BYTES = 10 * MiB;
/** Spec Limits: all of an app's KV values and blobs together. */
export const APP_CAP_BYTES = 100 * MiB;
/** DECISIONS §4: KV keys are at most 512 bytes (blob keys share the rule). */
export const KEY_CAP_BYTES = 512;
export const LIST_DEFAULT = 100;
export const LIST_MAX = 1000;

export function checkKey(key: unknown): string {
  if (typeof key !== "string" || key.length === 0) throw apiError("invalid_request", "a storage key must be a non-empty string");
  if (Buffer.byteLength(key) > KEY_CAP_BYTES) {
    throw apiError("invalid_request", `a storage key is at most ${KEY_CAP_BYTES} bytes; this one is ${Buffer.byteLength(key)}`);
  }
  return key;
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
  const after = used - freed + size;
  const holding = held > 0 ? ` and running operations hold ${held} more` : "";
  throw apiError("storage_full", `this write would bring the app's storage to ${after} bytes${holding}; the cap is ${APP_CAP_BYTES}. Delete or shrink keys to make room`, {
    recovery: recovery.shrink("payload", after + held, APP_CAP_BYTES),
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
