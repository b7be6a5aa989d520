export { AppStorage, type KvWrite, type StoredBlob } from "./storage.ts";
export { DataVersions } from "./data-versions.ts";
export { WriteLease, type SeenUsage } from "./ledger.ts";
export { APP_CAP_BYTES, CONTENT_TYPE_CAP, KEY_CAP_BYTES, MiB, VALUE_CAP_BYTES, type ListOptions, type ListPage } from "./limits.ts";
