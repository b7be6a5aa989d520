/** What `GET /app/{id}/events` streams besides `hello` and pings (DECISIONS §5). */
export type LiveEvent = { type: "revision"; revision: number } | { type: "data"; keys: string[] };
export type LiveListener = (event: LiveEvent) => void;

/** KV writes within this window reach listeners as one `data` event (DECISIONS §5: 250 ms). */
export const DATA_COALESCE_MS = 250;

/**
 * The in-process bus behind live app events. Domain services publish into it (a source write,
 * a KV change) without knowing who listens; the SSE route subscribes per open stream. Across
 * instances PostgreSQL LISTEN/NOTIFY is meant to feed the same bus (not built yet).
 */
export class LiveEvents {
  private readonly listeners = new Map<string, Set<LiveListener>>();
  private readonly pending = new Map<string, { keys: Set<string>; timer: NodeJS.Timeout }>();

  constructor(private readonly coalesceMs = DATA_COALESCE_MS) {}

  /** Starts delivering an app's events to `listener`; call the returned function to stop. */
  subscribe(appId: string, listener: LiveListener): () => void {
    let set = this.listeners.get(appId);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(appId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(appId);
    };
  }

  listenerCount(appId: string): number {
    return this.listeners.get(appId)?.size ?? 0;
  }

  revision(appId: string, revision: number): void {
    this.emit(appId, { type: "revision", revision });
  }

  /** A KV key changed; listeners get the keys of the whole window in one `data` event. */
  dataChanged(appId: string, key: string): void {
    // Nobody is watching: nothing to coalesce, and no timer to keep alive.
    if (this.listenerCount(appId) === 0) return;
    const open = this.pending.get(appId);
    if (open !== undefined) {
      open.keys.add(key);
      return;
    }
    const timer = setTimeout(() => {
      const batch = this.pending.get(appId);
      this.pending.delete(appId);
      if (batch !== undefined) this.emit(appId, { type: "data", keys: [...batch.keys].sort() });
    }, this.coalesceMs);
    timer.unref();
    this.pending.set(appId, { keys: new Set([key]), timer });
  }

  close(): void {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    this.listeners.clear();
  }

  private emit(appId: string, event: LiveEvent): void {
    for (const listener of this.listeners.get(appId) ?? []) {
      try {
        listener(event);
      } catch {
        // One broken stream must not stop the others; its own close handler cleans it up.
      }
    }
  }
}
