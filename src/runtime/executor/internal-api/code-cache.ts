import type { AppCode, CodeBundle, CodeSource } from "../types.ts";
import type { SecretsSource } from "./backends.ts";

export type { CodeBundle };

/** Module from the cache, secrets fresh from their source (they change without a new revision). */
export async function codeBundle(cache: CodeCache, secrets: SecretsSource | undefined, appId: string, revision: number, secretsVersion: number | undefined): Promise<CodeBundle | null> {
  const code = await cache.get(appId, revision);
  return code === null ? null : bundleOf(secrets, appId, code, secretsVersion);
}

/**
 * The bundle of any code of the app, published or not (Executor.stage). Secrets version 0 means
 * the app never had a secret (a set or delete moves it, never back to 0): none to read, which on
 * SQLite would also wait for a write's commit. Undefined: not known, so read.
 */
export async function bundleOf(secrets: SecretsSource | undefined, appId: string, code: AppCode, secretsVersion: number | undefined): Promise<CodeBundle> {
  const vars = secrets === undefined || secretsVersion === 0 ? {} : await secrets.forApp(appId);
  return { appId, module: code.module, nodeCompat: code.nodeCompat === true, origins: code.origins, vars };
}

// What the kept sources may weigh together (UTF-16, as V8 holds them): a host's thousands of
// small apps fit, and so do a few hundred at the 256 KiB module cap. A count alone let 1,000
// entries hold up to 500 MiB, or let 5,000 small apps read their source again at every build.
const MAX_BYTES = 64 * 1024 * 1024;

/**
 * Source per (app, revision), kept in memory: a revision's source never changes, and each
 * executor process asks for it again whenever it starts that isolate. The least recently asked
 * for goes first once the sources together weigh more than `maxBytes`.
 */
export class CodeCache {
  private readonly entries = new Map<string, { code: Promise<AppCode | null>; bytes: number }>();
  private bytes = 0;

  constructor(
    private readonly source: CodeSource,
    private readonly maxBytes = MAX_BYTES,
  ) {}

  get(appId: string, revision: number): Promise<AppCode | null> {
    const key = `${appId}:${revision}`;
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.code;
    }
    const entry = { code: this.source.load(appId, revision), bytes: 0 };
    this.entries.set(key, entry);
    // A miss or a failure is not cached: the revision may be published a moment later.
    entry.code.then(
      (code) => {
        if (code === null) this.forget(key, entry);
        else if (this.entries.get(key) === entry) this.weigh(entry, 2 * code.module.length);
      },
      () => this.forget(key, entry),
    );
    return entry.code;
  }

  /** What the kept sources weigh, in bytes, and how many there are. */
  footprint(): { sources: number; bytes: number } {
    return { sources: this.entries.size, bytes: this.bytes };
  }

  private weigh(entry: { bytes: number }, bytes: number): void {
    entry.bytes = bytes;
    this.bytes += bytes;
    for (const [oldest, kept] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.forget(oldest, kept);
    }
  }

  private forget(key: string, entry: { bytes: number }): void {
    if (this.entries.get(key) !== entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}
