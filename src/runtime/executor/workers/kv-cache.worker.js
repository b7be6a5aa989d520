// Runs INSIDE workerd, in the supervisor: the process's cache of KV reads, so that an app
// reading the same keys call after call does not pay a round trip to Node for each.
//
// Coherence comes from Node (src/executor/README.md, "KV read cache"): every committed KV write
// bumps a counter (the epoch) and queues an invalidation carrying it for every process; it
// reaches a process with the next frame Node sends there, so before any op call that starts
// after the write and before the writer's own reply. Every read reply carries the epoch Node
// saw before it read, and a reply older than an invalidation of its key is not cached, so a
// value read before a write can never outlive that write here. Invalidations leave a tombstone
// with their epoch for that check. An op already running when another op's write commits may
// still read the old value until Node next writes to its process.

const MAX_VALUE_BYTES = 64 * 1024;

export class KvCache {
  #entries = new Map(); // "app\0key" → { bytes: Uint8Array | null (tombstone), epoch }
  #bytes = 0;
  // The newest epoch of a tombstone the LRU dropped: replies older than it are not cached.
  #floor = 0;

  constructor(maxBytes = 16 * 1024 * 1024, maxEntries = 20_000) {
    this.maxBytes = maxBytes;
    this.maxEntries = maxEntries;
  }

  get(appId, key) {
    const id = appId + "\0" + key;
    const entry = this.#entries.get(id);
    if (entry === undefined || entry.bytes === null) return undefined;
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    return entry.bytes;
  }

  put(appId, key, bytes, epoch) {
    if (bytes.byteLength > MAX_VALUE_BYTES || epoch < this.#floor) return;
    const id = appId + "\0" + key;
    const old = this.#entries.get(id);
    // A newer value, or a write this read may not have seen, is known already.
    if (old !== undefined && old.epoch > epoch) return;
    this.#set(id, { bytes: bytes.slice(), epoch });
  }

  /** Forgets everything: a write up to `epoch` may have been missed. */
  clear(epoch) {
    this.#entries.clear();
    this.#bytes = 0;
    if (epoch > this.#floor) this.#floor = epoch;
  }

  invalidate(appId, key, epoch) {
    this.#set(appId + "\0" + key, { bytes: null, epoch });
  }

  #set(id, entry) {
    const old = this.#entries.get(id);
    if (old !== undefined) {
      this.#entries.delete(id);
      this.#bytes -= old.bytes?.byteLength ?? 0;
    }
    this.#entries.set(id, entry);
    this.#bytes += entry.bytes?.byteLength ?? 0;
    while (this.#bytes > this.maxBytes || this.#entries.size > this.maxEntries) {
      const [oldestId, oldest] = this.#entries.entries().next().value;
      this.#entries.delete(oldestId);
      this.#bytes -= oldest.bytes?.byteLength ?? 0;
      if (oldest.bytes === null && oldest.epoch > this.#floor) this.#floor = oldest.epoch;
    }
  }
}
