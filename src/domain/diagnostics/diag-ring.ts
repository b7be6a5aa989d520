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

/**
 * The diag ring buffer: 50 entries per app, in memory, per process, most recent first (spec:
 * Limits and Events 1). Lost on restart by design; durable failures go to activity.
 */
export class DiagRing {
  private readonly entries = new Map<string, DiagEntry[]>();
  private readonly listeners = new KeyedListeners<DiagEntry>();

  constructor(private readonly clock: Clock) {}

  push(appId: string, entry: Omit<DiagEntry, "ts"> & { ts?: string }): void {
    let list = this.entries.get(appId);
    if (list === undefined) {
      list = [];
      this.entries.set(appId, list);
    }
    const kept: DiagEntry = {
      ts: entry.ts ?? iso(this.clock.now()),
      message: entry.message.slice(0, MESSAGE_CAP),
      source: entry.source,
      line: entry.line,
      col: entry.col,
      stack: entry.stack.slice(0, STACK_CAP),
    };
    list.unshift(kept);
    if (list.length > DIAG_CAPACITY) list.length = DIAG_CAPACITY;
    this.listeners.emit(appId, kept);
  }

  /** Calls `listener` with each new entry of the app (this process's, as the ring is). */
  subscribe(appId: string, listener: (entry: DiagEntry) => void): () => void {
    return this.listeners.add(appId, listener);
  }

  /** Entries of an app, most recent first. */
  list(appId: string): DiagEntry[] {
    return [...(this.entries.get(appId) ?? [])];
  }

  drop(appId: string): void {
    this.entries.delete(appId);
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
