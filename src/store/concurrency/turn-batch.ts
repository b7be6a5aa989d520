import { deepFreeze } from "../caches/stamped-cache.ts";
import { TurnQueue } from "./turn-queue.ts";

/**
 * Reads asked for within one turn of the event loop, made as one query when the turn's I/O has
 * been handled (a `TurnQueue` whose items are keys, shared). On PostgreSQL each op call read its
 * app in a round trip of its own, and concurrent calls arrive together (in the bench's PostgreSQL
 * row, three a turn on average, up to eight): one query for all of them saves a write to the
 * socket, a wake-up of the server process and a result to parse per call beyond the first.
 *
 * No read is answered from before its asking: a key's query is sent after every `load` of it in
 * the batch was called, so a write acknowledged before a call began is in what that call reads.
 * Callers asking for the same key share its value, handed out deep-frozen.
 */
export class TurnBatch<V> {
  private readonly queue: TurnQueue<string, V | undefined>;

  constructor(
    /** The values of the keys found; a key left out reads as undefined. */
    loadMany: (keys: string[]) => Promise<Map<string, V>>,
    /** Keys per query, so one query's parameters stay small. */
    maxKeys = 32,
  ) {
    this.queue = new TurnQueue(
      async (keys) => {
        const found = await loadMany(keys);
        for (const value of found.values()) deepFreeze(value);
        return keys.map((key) => ({ status: "fulfilled", value: found.get(key) }));
      },
      maxKeys,
      (key) => key,
    );
  }

  load(key: string): Promise<V | undefined> {
    return this.queue.run(key);
  }
}
