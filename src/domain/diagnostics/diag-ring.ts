import { iso, type Clock } from "../../config/clock.ts";
import { KeyedListeners } from "../events/keyed-listeners.ts";

/** A diagnostic entry (spec: Diagnostic entry). */
export interface DiagEntry {
  ts: string;
  message: string;
  source: string;
  line: number;
  col: number;
  stack: string;
}

export const DIAG_CAPACITY = 50;
const MESSAGE_CAP = 2000;
const STACK_CAP = 8000;
const SOURCE_CAP = 500;
/**
 * Characters all apps' rings may hold together (~64 MiB as UTF-16): past it, the app that wrote
 * longest ago loses its ring. At 50 entries of up to 10,500 characters an app holds ~1 MiB, and
 * apps are many: unbounded, apps failing with long messages would grow the process until it died.
 */
export const DIAG_TOTAL_CHARS = 32 * 1024 * 1024;

/**
 * The diag ring buffer: 50 entries per app, in memory, per process, most recent first (spec:
 * Limits and Events 1). Lost on restart by design; durable failures go to activity. Apps are kept
 * in the order they last wrote, which is the order they go in past DIAG_TOTAL_CHARS.
 */
export class DiagRing {
  private readonly entries = new Map<string, { list: DiagEntry[]; chars: number }>();
  private readonly listeners = new KeyedListeners<DiagEntry>();
  private total = 0;

  constructor(
    private readonly clock: Clock,
    private readonly totalChars = DIAG_TOTAL_CHARS,
  ) {}

  push(appId: string, entry: Omit<DiagEntry, "ts"> & { ts?: string }): void {
    let ring = this.entries.get(appId);
    if (ring === undefined) ring = { list: [], chars: 0 };
    else this.entries.delete(appId);
    this.entries.set(appId, ring);
    const kept: DiagEntry = {
      ts: entry.ts ?? iso(this.clock.now()),
      message: entry.message.slice(0, MESSAGE_CAP),
      source: entry.source.slice(0, SOURCE_CAP),
      // The spec's integers: whatever a report carried that is none (Infinity) would fail every read.
      line: sourcePosition(entry.line),
      col: sourcePosition(entry.col),
      stack: entry.stack.slice(0, STACK_CAP),
    };
    ring.list.unshift(kept);
    this.count(ring, charsOf(kept));
    while (ring.list.length > DIAG_CAPACITY) this.count(ring, -charsOf(ring.list.pop() as DiagEntry));
    for (const id of this.entries.keys()) {
      if (this.total <= this.totalChars || id === appId) break;
      this.drop(id);
    }
    this.listeners.emit(appId, kept);
  }

  /** Calls `listener` with each new entry of the app (this process's, as the ring is). */
  subscribe(appId: string, listener: (entry: DiagEntry) => void): () => void {
    return this.listeners.add(appId, listener);
  }

  /** Entries of an app, most recent first. */
  list(appId: string): DiagEntry[] {
    return [...(this.entries.get(appId)?.list ?? [])];
  }

  drop(appId: string): void {
    const ring = this.entries.get(appId);
    if (ring === undefined) return;
    this.entries.delete(appId);
    this.total -= ring.chars;
  }

  /** Characters held across every app (for tests and the metrics). */
  get chars(): number {
    return this.total;
  }

  private count(ring: { chars: number }, chars: number): void {
    ring.chars += chars;
    this.total += chars;
  }

  /** env.LOG.emit from app code (the executor's LogSink). */
  emit(appId: string, entry: { level: string; message: string; data?: unknown }): void {
    const data = entry.data === undefined ? "" : ` ${JSON.stringify(entry.data)}`;
    this.push(appId, { message: `[${entry.level}] ${entry.message}${data}`, source: "env.LOG", line: 0, col: 0, stack: "" });
  }

  /** An entry from a thrown error: source, line and column from the first app frame. */
  pushError(appId: string, message: string, stack: string): void {
    const frame = /\(?([\w./-]+\.js):(\d+):(\d+)\)?/.exec(stack);
    this.push(appId, {
      message,
      stack,
      source: frame?.[1] ?? "",
      line: Number(frame?.[2] ?? 0),
      col: Number(frame?.[3] ?? 0),
    });
  }
}

function charsOf(entry: DiagEntry): number {
  return entry.ts.length + entry.message.length + entry.source.length + entry.stack.length;
}

/** A line or column as the spec's integer: 0 for one no source could have (Infinity, -4, 1.5). */
export function sourcePosition(n: number): number {
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}
