import { deepFreeze } from "./stamped-cache.ts";

interface Waiter<V> {
  resolve: (value: V | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * Reads asked for within one turn of the event loop, made as one query when the turn's I/O has
 * been handled (`setImmediate`). On PostgreSQL each op call read its app in a round trip of its
 * own, and concurrent calls arrive together (in the bench's PostgreSQL row, three a turn on
 * average, up to eight): one query for all of them saves a write to the socket, a wake-up of the
 * server process and a result to parse per call beyond the first.
 *
 * No read is answered from before its asking: a key's query is sent after every `load` of it in
 * the batch was called, so a write acknowledged before a call began is in what that call reads.
 * Callers asking for the same key share its value, handed out deep-frozen.
 */
export class TurnBatch<V> {
  private waiting = new Map<string, Waiter<V>[]>();
  private scheduled = false;

  constructor(
    /** The values of the keys found; a key left out reads as undefined. */
    private readonly loadMany: (keys: string[]) => Promise<Map<string, V>>,
    /** Keys per query, so one query's parameters stay small. */
    private readonly maxKeys = 32,
  ) {}

  load(key: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(key);
      if (waiters === undefined) this.waiting.set(key, [{ resolve, reject }]);
      else waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.waiting;
    this.waiting = new Map();
    const keys = [...batch.keys()];
    for (let i = 0; i < keys.length; i += this.maxKeys) void this.run(keys.slice(i, i + this.maxKeys), batch);
  }

  private async run(keys: string[], batch: Map<string, Waiter<V>[]>): Promise<void> {
    const waiters = keys.flatMap((key) => (batch.get(key) ?? []).map((waiter) => ({ key, waiter })));
    try {
      const found = await this.loadMany(keys);
      for (const value of found.values()) deepFreeze(value);
      for (const { key, waiter } of waiters) waiter.resolve(found.get(key));
    } catch (error) {
      for (const { waiter } of waiters) waiter.reject(error);
    }
  }
}
