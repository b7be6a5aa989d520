interface Waiter<O> {
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/** One item of a turn and everyone waiting on its outcome (several, where items are shared). */
interface Queued<I, O> {
  item: I;
  waiters: Waiter<O>[];
}

/**
 * Work asked for within one turn of the event loop, run together once the turn's I/O has been
 * handled (`setImmediate`), at most `max` items at a time. Each item keeps its own outcome
 * (`runMany` settles them one by one, in order), and a `runMany` that throws fails only its own
 * items. With `shareBy`, items of one turn with the same key are one item, and their askers share
 * its outcome (`TurnBatch`'s reads); the sharing ends with the turn, so nothing asked after an
 * item was sent is answered by it.
 *
 * With `oneRunBy`, a key has at most one run in flight, and its items in it are at most `max`
 * and not split across runs: an item whose key is being run waits for that run to settle and
 * goes with the first turn after it, beside whatever else came for its key meanwhile, in the
 * order asked. Under load a key's items then gather in fewer, larger runs (KvSetBatch: one app's
 * writes, which PostgreSQL would serialize on the app's usage row anyway). A run that waits holds
 * up its keys' next items; where a run carries several keys, those of all of them.
 */
export class TurnQueue<I, O> {
  private queue: Queued<I, O>[] = [];
  /** This turn's items by key, when they are shared. */
  private readonly byKey: Map<unknown, Queued<I, O>> | null;
  private scheduled = false;

  /** oneRunBy: the keys with a run in flight, and the items held back until it settles. */
  private readonly running = new Set<unknown>();
  private readonly held = new Map<unknown, Queued<I, O>[]>();

  constructor(
    private readonly runMany: (items: I[]) => Promise<PromiseSettledResult<O>[]>,
    private readonly max = 32,
    private readonly shareBy: ((item: I) => unknown) | null = null,
    private readonly oneRunBy: ((item: I) => unknown) | null = null,
  ) {
    this.byKey = shareBy === null ? null : new Map();
  }

  run(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      const key = this.shareBy?.(item);
      let queued = this.byKey?.get(key);
      if (queued === undefined) {
        queued = { item, waiters: [] };
        this.queue.push(queued);
        this.byKey?.set(key, queued);
      }
      queued.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    this.byKey?.clear();
    const runs = this.oneRunBy === null ? chunks(queue, this.max) : this.runsByKey(queue, this.oneRunBy);
    for (const run of runs) void this.settle(run);
  }

  /**
   * oneRunBy: this turn's runs, each key's items whole in one of them. A key with a run in
   * flight, or past `max` items this turn, keeps the rest in `held`, in the order asked.
   */
  private runsByKey(queue: Queued<I, O>[], keyOf: (item: I) => unknown): Queued<I, O>[][] {
    const going = new Map<unknown, Queued<I, O>[]>();
    for (const queued of queue) {
      const key = keyOf(queued.item);
      const held = this.held.get(key);
      const mine = going.get(key);
      if (held !== undefined) held.push(queued);
      else if (this.running.has(key) || (mine?.length ?? 0) >= this.max) this.held.set(key, [queued]);
      else if (mine === undefined) going.set(key, [queued]);
      else mine.push(queued);
    }
    const runs: Queued<I, O>[][] = [];
    let run: Queued<I, O>[] = [];
    for (const [key, items] of going) {
      this.running.add(key);
      if (run.length > 0 && run.length + items.length > this.max) {
        runs.push(run);
        run = [];
      }
      run.push(...items);
    }
    if (run.length > 0) runs.push(run);
    return runs;
  }

  /** After a run of `chunk` settled: its keys' held items go next turn. */
  private release(chunk: Queued<I, O>[], keyOf: (item: I) => unknown): void {
    for (const key of new Set(chunk.map((q) => keyOf(q.item)))) {
      this.running.delete(key);
      const held = this.held.get(key);
      if (held === undefined) continue;
      this.held.delete(key);
      // Ahead of this turn's items: all of these were asked before any of them, and for a key
      // the order asked is the order run (a key's later write wins).
      this.queue.unshift(...held);
      this.schedule();
    }
  }

  private async settle(chunk: Queued<I, O>[]): Promise<void> {
    try {
      const outcomes = await this.runMany(chunk.map((q) => q.item));
      chunk.forEach((q, i) => {
        const outcome = outcomes[i];
        for (const waiter of q.waiters) {
          if (outcome === undefined) waiter.reject(new Error("a batched item came back without its outcome"));
          else if (outcome.status === "fulfilled") waiter.resolve(outcome.value);
          else waiter.reject(outcome.reason);
        }
      });
    } catch (error) {
      for (const q of chunk) for (const waiter of q.waiters) waiter.reject(error);
    } finally {
      if (this.oneRunBy !== null) this.release(chunk, this.oneRunBy);
    }
  }
}

function chunks<T>(items: T[], max: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += max) out.push(items.slice(i, i + max));
  return out;
}
