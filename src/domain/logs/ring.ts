import { LOG_LEVELS, type LogLevel, type LogLine } from "../../runtime/index.ts";

/** DECISIONS §18: the newest 1,000 lines of each app, in this instance's memory. */
export const RING_LINES = 1000;
/** Bytes one app's ring may hold (1,000 lines of 16 KB would be 16 MB). */
export const RING_APP_BYTES = 1024 * 1024;
/** Bytes all rings together may hold: past it, the app written to longest ago loses its ring. */
export const RING_TOTAL_BYTES = 64 * 1024 * 1024;

export interface LogFilter {
  limit: number;
  /** Epoch ms: only lines written after it. */
  since?: number;
  op?: string;
  /** This level and those above it. */
  level?: LogLevel;
}

interface AppRing {
  /** Oldest first; `start` is the index of the oldest line still kept. */
  lines: LogLine[];
  start: number;
  bytes: number;
}

/**
 * Every app's newest log lines. A ring is an array read from `start`, compacted when half of it
 * is spent, so adding a line is O(1) amortized whatever the ring holds. Apps are kept in the
 * order they last wrote, which is the order they go in when memory runs short.
 */
export class LogRings {
  private readonly apps = new Map<string, AppRing>();
  private total = 0;

  constructor(
    private readonly appBytes = RING_APP_BYTES,
    private readonly totalBytes = RING_TOTAL_BYTES,
  ) {}

  add(appId: string, lines: readonly LogLine[]): void {
    let ring = this.apps.get(appId);
    if (ring === undefined) ring = { lines: [], start: 0, bytes: 0 };
    else this.apps.delete(appId);
    this.apps.set(appId, ring);
    for (const line of lines) {
      const size = sizeOf(line);
      ring.lines.push(line);
      ring.bytes += size;
      this.total += size;
    }
    while (ring.lines.length - ring.start > RING_LINES || (ring.bytes > this.appBytes && ring.lines.length - ring.start > 1)) this.dropOldest(ring);
    if (ring.start > 1024 && ring.start * 2 > ring.lines.length) {
      ring.lines = ring.lines.slice(ring.start);
      ring.start = 0;
    }
    for (const [id, other] of this.apps) {
      if (this.total <= this.totalBytes || id === appId) break;
      this.forget(id, other);
    }
  }

  /** Newest first, filtered. */
  read(appId: string, filter: LogFilter): LogLine[] {
    const ring = this.apps.get(appId);
    if (ring === undefined) return [];
    const floor = filter.level === undefined ? 0 : LOG_LEVELS.indexOf(filter.level);
    const out: LogLine[] = [];
    for (let i = ring.lines.length - 1; i >= ring.start && out.length < filter.limit; i -= 1) {
      const line = ring.lines[i] as LogLine;
      if (matches(line, filter, floor)) out.push(line);
    }
    return out;
  }

  /** An app's lines go with the app (deleted or reaped). */
  drop(appId: string): void {
    const ring = this.apps.get(appId);
    if (ring !== undefined) this.forget(appId, ring);
  }

  /** Bytes held across every app, for the metrics. */
  get bytes(): number {
    return this.total;
  }

  private dropOldest(ring: AppRing): void {
    const line = ring.lines[ring.start] as LogLine;
    ring.lines[ring.start] = undefined as unknown as LogLine;
    ring.start += 1;
    const size = sizeOf(line);
    ring.bytes -= size;
    this.total -= size;
  }

  private forget(appId: string, ring: AppRing): void {
    this.apps.delete(appId);
    this.total -= ring.bytes;
  }
}

/** Whether a line passes a filter (`floor`: the filter level's index). */
export function matches(line: LogLine, filter: Omit<LogFilter, "limit">, floor = filter.level === undefined ? 0 : LOG_LEVELS.indexOf(filter.level)): boolean {
  return (filter.since === undefined || line.time > filter.since) && (filter.op === undefined || line.op === filter.op) && LOG_LEVELS.indexOf(line.level) >= floor;
}

/** What a line holds in memory, about: its text at two bytes a character, and its fields. */
function sizeOf(line: LogLine): number {
  return 2 * (line.message.length + line.op.length + (line.requestId?.length ?? 0)) + 64;
}
