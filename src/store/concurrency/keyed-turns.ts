/**
 * Runs the tasks given under one key one after another, in the order given; tasks under other keys
 * run beside them. A key's queue waits here, in the process, not in the database: work that takes
 * turns by a database lock would otherwise hold a pooled connection while it waits, and one client
 * sending many at once could hold them all.
 */
export class KeyedTurns {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with a task running or waiting (tests). */
  get size(): number {
    return this.tails.size;
  }
}
