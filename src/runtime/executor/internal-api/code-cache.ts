import type { AppCode, CodeBundle, CodeSource } from "../types.ts";
import type { SecretsSource } from "./backends.ts";

export type { CodeBundle };

/** Module from the cache, secrets fresh from their source (they change without a new revision). */
export async function codeBundle(cache: CodeCache, secrets: SecretsSource | undefined, appId: string, revision: number): Promise<CodeBundle | null> {
  const code = await cache.get(appId, revision);
  return code === null ? null : bundleOf(secrets, appId, code);
}

/** The bundle of any code of the app, published or not (Executor.stage); `vars` already known spare the secrets' read. */
export async function bundleOf(secrets: SecretsSource | undefined, appId: string, code: AppCode, vars?: Record<string, string>): Promise<CodeBundle> {
  return { appId, module: code.module, nodeCompat: code.nodeCompat === true, origins: code.origins, vars: vars ?? (secrets === undefined ? {} : await secrets.forApp(appId)) };
}

/**
 * Source per (app, revision), kept in memory: a revision's source never changes, and each
 * executor process asks for it again whenever it starts that isolate.
 */
export class CodeCache {
  private readonly entries = new Map<string, Promise<AppCode | null>>();

  constructor(
    private readonly source: CodeSource,
    private readonly capacity = 1000,
  ) {}

  get(appId: string, revision: number): Promise<AppCode | null> {
    const key = `${appId}:${revision}`;
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const loading = this.source.load(appId, revision);
    this.entries.set(key, loading);
    // A miss or a failure is not cached: the revision may be published a moment later.
    loading.then(
      (code) => {
        if (code === null) this.entries.delete(key);
      },
      () => this.entries.delete(key),
    );
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return loading;
  }
}
