import type { DataVersions, KvWrite, ListOptions, ListPage, SeenUsage, StoredBlob, WriteLease } from "../../storage/index.ts";

/** What the internal API needs of app storage; `AppStorage` in domain/storage implements it. */
export interface StorageBackend {
  /** No other instance writes this app data (SQLite): no data versions to check. */
  readonly soleWriter: boolean;
  /** Where other instances write too: whether an app's cached reads are outdated. */
  readonly dataVersions: Pick<DataVersions, "check">;
  /** Where other instances write too: an app's usage and data version as they stand now. */
  seenUsage(appId: string): Promise<SeenUsage>;
  /** Room held for one op's writes (see AppStorage.lease); null when none can be held. */
  lease(appId: string, max: number, seen?: SeenUsage): WriteLease | null;
  kvGet(appId: string, key: string): Promise<string | null>;
  kvSet(appId: string, key: string, json: string, lease: WriteLease | null): Promise<void>;
  /** Several writes as one commit: all of them or none. */
  kvCommit(appId: string, writes: readonly KvWrite[], lease: WriteLease | null): Promise<void>;
  kvDelete(appId: string, key: string): Promise<boolean>;
  kvList(appId: string, options: ListOptions): Promise<ListPage>;
  blobPut(appId: string, key: string, data: Buffer, contentType: string, lease: WriteLease | null): Promise<void>;
  blobGet(appId: string, key: string): Promise<StoredBlob | null>;
  blobDelete(appId: string, key: string): Promise<boolean>;
  blobList(appId: string, options: ListOptions): Promise<ListPage>;
  /** Called after each committed KV write or delete, before the writer is answered. */
  onKvChange(hook: (appId: string, key: string) => void): void;
}

/** Where env.LOG lines go (the diag ring buffer). */
export interface LogSink {
  emit(appId: string, entry: { level: string; message: string; data?: unknown }): void;
}

/**
 * Seam for issue 5: the app's secrets as `env.<NAME>` strings, read when its isolate starts.
 * Bump the app's `secretsVersion` on change so the next call starts a fresh isolate.
 */
export interface SecretsSource {
  forApp(appId: string): Promise<Record<string, string>>;
}
