// Types for the one supervisor module Node also loads: test/kv-cache.test.ts checks its rules.
export declare class KvCache {
  constructor(maxBytes?: number, maxEntries?: number);
  get(appId: string, key: string): Uint8Array | undefined;
  put(appId: string, key: string, bytes: Uint8Array, epoch: number): void;
  clear(epoch: number): void;
  invalidate(appId: string, key: string, epoch: number): void;
}
