interface Queued<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Work asked for within one turn of the event loop, run together once the turn's I/O has been
 * handled (`setImmediate`), at most `max` items at a time. The writing twin of `TurnBatch`: items
 * are not shared or deduplicated, each keeps its own outcome (`runMany` settles them one by one,
 * in order), and a `runMany` that throws fails only its own items.
 */
export class TurnQueue<I, O> {
  private queue: Queued<I, O>[] = [];
  private scheduled = false;

  constructor(
    private readonly runMany: (items: I[]) => Promise<PromiseSettledResult<O>[]>,
    private readonly max = 32,
  ) {}

  run(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
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
    for (let i = 0; i < queue.length; i += this.max) void this.settle(queue.slice(i, i + this.max));
  }

  private async settle(chunk: Queued<I, O>[]): Promise<void> {
    try {
      const outcomes = await this.runMany(chunk.map((q) => q.item));
      chunk.forEach((q, i) => {
        const outcome = outcomes[i];
        if (outcome === undefined) q.reject(new Error("a batched item came back without its outcome"));
        else if (outcome.status === "fulfilled") q.resolve(outcome.value);
        else q.reject(outcome.reason);
      });
    } catch (error) {
      for (const q of chunk) q.reject(error);
    }
  }
}
