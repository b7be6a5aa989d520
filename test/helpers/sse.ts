/** One server-sent event as a test sees it, with when it arrived (performance.now()). */
export interface SentEvent {
  event: string;
  data: unknown;
  at: number;
}

/**
 * Reads a text/event-stream response as events arrive. `next` waits for the first event not yet
 * taken that matches; `close` ends the stream (aborting its request, when `open` made it, so the
 * connection closes and the server sees the stream end). The caller bounds waits with its own timeout.
 */
export class EventReader {
  private readonly seen: SentEvent[] = [];
  private readonly waiters = new Set<() => void>();
  private ended = false;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(
    readonly response: Response,
    private readonly abort: AbortController | null = null,
  ) {
    const reader = response.body?.getReader();
    if (reader === undefined) throw new Error("the response has no body");
    this.reader = reader;
    void this.pump();
  }

  /** Requests `url` and reads its events. */
  static async open(url: string, headers: Record<string, string> = {}): Promise<EventReader> {
    const abort = new AbortController();
    return new EventReader(await fetch(url, { headers, signal: abort.signal }), abort);
  }

  /** The first unread event matching `match`; rejects once the stream ends without one. */
  async next(match: (e: SentEvent) => boolean = () => true): Promise<SentEvent> {
    for (;;) {
      const found = this.take(match);
      if (found !== null) return found;
      if (this.ended) throw new Error("the event stream ended");
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
  }

  /** As `next`, but null once `ms` pass without one; an event arriving later stays unread. */
  async within(ms: number, match: (e: SentEvent) => boolean): Promise<SentEvent | null> {
    const deadline = performance.now() + ms;
    for (;;) {
      const found = this.take(match);
      if (found !== null || this.ended) return found;
      const left = deadline - performance.now();
      if (left <= 0) return null;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.waiters.delete(wake);
          resolve();
        }, left);
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        this.waiters.add(wake);
      });
    }
  }

  private take(match: (e: SentEvent) => boolean): SentEvent | null {
    const index = this.seen.findIndex(match);
    return index >= 0 ? (this.seen.splice(index, 1)[0] as SentEvent) : null;
  }

  /** Reads until `until` holds of every event so far (or the stream ends); returns them all. */
  async until(until: (events: SentEvent[]) => boolean): Promise<SentEvent[]> {
    while (!until(this.seen) && !this.ended) await new Promise<void>((resolve) => this.waiters.add(resolve));
    return [...this.seen];
  }

  async close(): Promise<void> {
    this.abort?.abort();
    await this.reader.cancel().catch(() => undefined);
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await this.reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event !== undefined && data !== undefined) this.seen.push({ event, data: JSON.parse(data) as unknown, at: performance.now() });
        }
        this.wake();
      }
    } catch {
      // Cancelled or cut: the stream has ended either way.
    }
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    for (const resolve of this.waiters) resolve();
    this.waiters.clear();
  }
}
