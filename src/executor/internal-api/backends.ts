import type { ListOptions, ListPage, StoredBlob } from "../../domain/storage/index.ts";

/** What the internal API needs of app storage; `AppStorage` in domain/storage implements it. */
export interface StorageBackend {
  kvGet(appId: string, key: string): Promise<string | null>;
  kvSet(appId: string, key: string, json: string): Promise<void>;
  kvDelete(appId: string, key: string): Promise<boolean>;
  kvList(appId: string, options: ListOptions): Promise<ListPage>;
  blobPut(appId: string, key: string, data: Buffer, contentType: string): Promise<void>;
  blobGet(appId: string, key: string): Promise<StoredBlob | null>;
  blobDelete(appId: string, key: string): Promise<boolean>;
  blobList(appId: string, options: ListOptions): Promise<ListPage>;
}

/** The app's secrets, opened, for `env.<NAME>`; read only when an isolate is built. */
export interface SecretValues {
  valuesFor(appId: string): Promise<Record<string, string>>;
}

/** Where env.LOG lines go (the diag ring buffer). */
export interface LogSink {
  emit(appId: string, entry: { level: string; message: string; data?: unknown }): void;
}
