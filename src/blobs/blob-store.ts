/**
 * Where asset bytes live (ARCHITECTURE part 4). Keys are opaque names the caller builds from
 * checked parts; an implementation must still refuse any key that could leave its namespace.
 */
export interface BlobStore {
  /** Writes all of `data` under `key`, replacing what was there; readers never see a partial write. */
  put(key: string, data: Buffer): Promise<void>;
  /** The bytes, or null when there are none. */
  get(key: string): Promise<Buffer | null>;
  /** Removes `key`; removing what is absent is not an error. */
  delete(key: string): Promise<void>;
  /** Removes every key under `prefix` + "/" (an app's assets when it is deleted). */
  deletePrefix(prefix: string): Promise<void>;
  /** Lets go of connections; called once, after the last request. */
  close(): void;
}

// Path segments of letters, digits, dot, dash and underscore, never `.` or `..` on their own.
const SEGMENT = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}$/;

/** Throws unless every `/`-separated segment of `key` is a plain name (no traversal, no root). */
export function checkBlobKey(key: string): string {
  if (key.length === 0 || key.length > 1024 || !key.split("/").every((s) => SEGMENT.test(s))) {
    throw new Error(`refusing blob key ${JSON.stringify(key)}`);
  }
  return key;
}
