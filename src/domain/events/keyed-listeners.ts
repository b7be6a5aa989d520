/** Listeners per key (an app's id): added and removed as streams open and close. */
export class KeyedListeners<T> {
  private readonly sets = new Map<string, Set<(value: T) => void>>();

  /** Starts calling `listener` with the key's values; call the returned function to stop. */
  add(key: string, listener: (value: T) => void): () => void {
    let set = this.sets.get(key);
    if (set === undefined) {
      set = new Set();
      this.sets.set(key, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.sets.delete(key);
    };
  }

  count(key: string): number {
    return this.sets.get(key)?.size ?? 0;
  }

  emit(key: string, value: T): void {
    for (const listener of this.sets.get(key) ?? []) {
      try {
        listener(value);
      } catch {
        // One broken stream must not stop the others; its own close handler cleans it up.
      }
    }
  }

  clear(): void {
    this.sets.clear();
  }
}
