export { AppStorage, type StoredBlob } from "./storage.ts";
export { APP_CAP_BYTES, KEY_CAP_BYTES, MiB, VALUE_CAP_BYTES, type ListOptions, type ListPage } from "./limits.ts";
