import { Writable } from "node:stream";

/** A log stream that keeps every line, so tests can grep what the server logged. */
export class LogCapture extends Writable {
  private readonly chunks: string[] = [];
  private readonly waiters = new Set<{ matches: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }>();

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const text = chunk.toString();
    this.chunks.push(text);
    if (this.waiters.size > 0) {
      for (const parsed of parseLines(text)) {
        for (const waiter of this.waiters) {
          if (!waiter.matches(parsed)) continue;
          this.waiters.delete(waiter);
          waiter.resolve(parsed);
        }
      }
    }
    callback();
  }

  /** The first line logged from now on that `matches`. */
  next(matches: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    return new Promise((resolve) => this.waiters.add({ matches, resolve }));
  }

  /** The first line logged so far, or from now on, that `matches` (a server in another process logs a little later). */
  find(matches: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    const seen = this.lines().find(matches);
    return seen === undefined ? this.next(matches) : Promise.resolve(seen);
  }

  get text(): string {
    return this.chunks.join("");
  }

  lines(): Record<string, unknown>[] {
    return parseLines(this.text);
  }
}

/** The JSON log lines in `text`, blank lines skipped. */
function parseLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
