import { KeyedListeners } from "./keyed-listeners.ts";

/** What `GET /app/{id}/events` streams besides `hello` and pings (DECISIONS §5). */
export type LiveEvent = { type: "revision"; revision: number } | { type: "data"; keys: string[] } | { type: "suspended" } | { type: "deleted" } | { type: "domains" };

/** The bus key custom-domain changes travel under (no app id looks like it): each instance's host map reloads. */
export const DOMAINS_KEY = "~domains";
export type LiveListener = (event: LiveEvent) => void;

/**
 * Carries events between instances (PostgreSQL LISTEN/NOTIFY): `send` reaches every instance,
 * this one included, which hands them back through `LiveEvents.deliver`.
 */
export interface LiveTransport {
  send(appId: string, event: LiveEvent): void;
  close(): Promise<void>;
}

/** KV writes within this window reach listeners as one `data` event (DECISIONS §5: 250 ms). */
export const DATA_COALESCE_MS = 250;

/**
 * The in-process bus behind live app events. Domain services publish into it (a source write,
 * a KV change) without knowing who listens; the SSE route subscribes per open stream. With a
 * transport (several instances on PostgreSQL) every event goes out through it and comes back in
 * through `deliver` on each instance, so a stream sees writes made on any of them.
 */
export class LiveEvents {
  private readonly listeners = new KeyedListeners<LiveEvent>();
  private readonly pending = new Map<string, { keys: Set<string>; timer: NodeJS.Timeout }>();
  private transport: LiveTransport | null = null;

  constructor(private readonly coalesceMs = DATA_COALESCE_MS) {}

  useTransport(transport: LiveTransport): void {
    this.transport = transport;
  }

  /** An event from the transport: hand it to this instance's listeners. */
  deliver(appId: string, event: LiveEvent): void {
    this.emit(appId, event);
  }

  /** Starts delivering an app's events to `listener`; call the returned function to stop. */
  subscribe(appId: string, listener: LiveListener): () => void {
    return this.listeners.add(appId, listener);
  }

  listenerCount(appId: string): number {
    return this.listeners.count(appId);
  }

  revision(appId: string, revision: number): void {
    this.publish(appId, { type: "revision", revision });
  }

  /** An operator suspended the app (or its owner): its open streams end, on every instance. */
  suspended(appId: string): void {
    this.publish(appId, { type: "suspended" });
  }

  /** The app was deleted (or reaped): its open streams end, on every instance. */
  deleted(appId: string): void {
    this.publish(appId, { type: "deleted" });
  }

  /** A custom domain was added, changed state or went away: every instance's host map reloads. */
  domainsChanged(): void {
    this.publish(DOMAINS_KEY, { type: "domains" });
  }

  /** A KV key changed; listeners get the keys of the whole window in one `data` event. */
  dataChanged(appId: string, key: string): void {
    // Nobody is watching (on this lone instance): nothing to coalesce, no timer to keep alive.
    if (this.transport === null && this.listenerCount(appId) === 0) return;
    const open = this.pending.get(appId);
    if (open !== undefined) {
      open.keys.add(key);
      return;
    }
    const timer = setTimeout(() => {
      const batch = this.pending.get(appId);
      this.pending.delete(appId);
      if (batch !== undefined) this.publish(appId, { type: "data", keys: [...batch.keys].sort() });
    }, this.coalesceMs);
    timer.unref();
    this.pending.set(appId, { keys: new Set([key]), timer });
  }

  async close(): Promise<void> {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    this.listeners.clear();
    await this.transport?.close();
  }

  private publish(appId: string, event: LiveEvent): void {
    if (this.transport === null) this.emit(appId, event);
    else this.transport.send(appId, event);
  }

  private emit(appId: string, event: LiveEvent): void {
    this.listeners.emit(appId, event);
  }
}
