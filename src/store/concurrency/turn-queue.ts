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
 */
export class TurnQueue<I, O> {
  private queue: Queued<I, O>[] = [];
  /** This turn's items by key, when they are shared. */
  private readonly byKey: Map<unknown, Queued<I, O>> | null;
  private scheduled = false;

  constructor(
    private readonly runMany: (items: I[]) => Promise<PromiseSettledResult<O>[]>,
    private readonly max = 32,
    private readonly shareBy: ((item: I) => unknown) | null = null,
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
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    this.byKey?.clear();
    for (let i = 0; i < queue.length; i += this.max) void this.settle(queue.slice(i, i + this.max));
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
    }
  }
}
