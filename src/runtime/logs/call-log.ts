import { LOG_LEVELS, type LogLevel, type LogLine, type LogLineSink } from "../ports.ts";
import type { LineRedactor } from "./redactors.ts";

/** DECISIONS §18: what one op call keeps of what its code wrote, console and env.LOG together. */
export const MAX_CALL_LINES = 64;
export const MAX_CALL_BYTES = 16 * 1024;

/** `env.LOG.emit` takes any level name; these are the ones that mean something else than `info`. */
const EMIT_LEVELS: Readonly<Record<string, LogLevel>> = { debug: "debug", trace: "debug", info: "info", log: "info", warn: "warn", warning: "warn", error: "error", fatal: "error" };

interface Written {
  level: LogLevel;
  time: number;
  text: string;
  /** The app's isolate cut the line short (the call's bytes ran out there). */
  cut: boolean;
}

/**
 * The lines of one op call on their way to the app's log ring: each is redacted, the call's caps
 * are held across `env.LOG.emit` (as it comes) and the console lines (with the result), and one
 * marker line at the end says how many were not kept. Everything the isolate says is checked
 * here again: the shim shares its global scope with the app's code.
 */
export class CallLog {
  private lines = 0;
  private bytes = 0;
  private dropped = 0;
  /** In the order written: redaction waits for the app's secrets the first time. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly sink: LogLineSink,
    private readonly call: { appId: string; op: string; requestId: string | null; startedAt: number },
    private readonly redactor: () => Promise<LineRedactor>,
    private readonly now: () => number,
  ) {}

  /** An `env.LOG.emit` line: `data`, if any, follows the message as JSON. */
  emit(level: unknown, message: string, data: unknown): Promise<void> {
    const json = data === undefined ? undefined : safeJson(data);
    const text = json === undefined ? message : `${message} ${json}`;
    return this.add([{ level: (typeof level === "string" && Object.hasOwn(EMIT_LEVELS, level) ? EMIT_LEVELS[level] : undefined) ?? "info", time: this.now(), text, cut: false }], 0);
  }

  /** The console lines a result frame carried (`{lines: [[level, time, text, cut?]], dropped}`), unchecked. */
  captured(raw: unknown): Promise<void> {
    if (typeof raw !== "object" || raw === null) return this.queue;
    const { lines, dropped } = raw as { lines?: unknown; dropped?: unknown };
    const written: Written[] = [];
    let refused = typeof dropped === "number" && Number.isSafeInteger(dropped) && dropped > 0 ? dropped : 0;
    for (const entry of Array.isArray(lines) ? lines : []) {
      const line = written.length < MAX_CALL_LINES ? this.lineOf(entry) : null;
      if (line === null) refused += 1;
      else written.push(line);
    }
    return this.add(written, refused);
  }

  /** Once the call is over: the marker line, when lines were not kept. */
  async finish(): Promise<void> {
    await this.queue;
    if (this.dropped === 0) return;
    const n = this.dropped;
    this.dropped = 0;
    this.write([this.lineFor("warn", this.now(), `[truncated] ${n} more line${n === 1 ? "" : "s"} not kept: one call keeps at most ${MAX_CALL_LINES} lines and ${MAX_CALL_BYTES / 1024} KB`)]);
  }

  private add(written: readonly Written[], refused: number): Promise<void> {
    this.queue = this.queue.then(async () => {
      this.dropped += refused;
      if (written.length === 0) return;
      const redactor = await this.redactor().catch(() => null);
      const out: LogLine[] = [];
      for (const line of written) {
        const room = MAX_CALL_BYTES - this.bytes;
        if (this.lines >= MAX_CALL_LINES || room <= 0) {
          this.dropped += 1;
          continue;
        }
        // Without the app's secrets no line can be shown safely.
        const message = redactor === null ? "[line withheld: the app's secrets could not be read to redact it]" : redactLine(redactor, line);
        const { text, bytes } = fit(message, room);
        this.lines += 1;
        this.bytes += bytes;
        out.push(this.lineFor(line.level, line.time, text));
      }
      this.write(out);
    });
    return this.queue;
  }

  private lineOf(entry: unknown): Written | null {
    if (!Array.isArray(entry) || typeof entry[2] !== "string") return null;
    const [level, time, text, cut] = entry as unknown[];
    const now = this.now();
    // The isolate's clock, kept within the call: it cannot date a line before or after it.
    const at = typeof time === "number" && Number.isFinite(time) ? Math.min(Math.max(time, this.call.startedAt), now) : now;
    return { level: LOG_LEVELS.includes(level as LogLevel) ? (level as LogLevel) : "info", time: at, text: text as string, cut: cut === 1 };
  }

  private lineFor(level: LogLevel, time: number, message: string): LogLine {
    return { time, level, op: this.call.op, requestId: this.call.requestId, message };
  }

  private write(lines: LogLine[]): void {
    if (lines.length > 0) this.sink.write(this.call.appId, lines);
  }
}

function redactLine(redactor: LineRedactor, line: Written): string {
  const text = redactor.redact(line.text);
  return line.cut ? `${redactor.cutTail(text)}…` : text;
}

/** The text within `room` UTF-8 bytes, cut between characters, and the bytes it takes. */
function fit(text: string, room: number): { text: string; bytes: number } {
  const bytes = Buffer.byteLength(text);
  if (bytes <= room) return { text, bytes };
  const cut = Buffer.from(text).subarray(0, room).toString("utf8").replace(/\uFFFD$/, "");
  return { text: `${cut}…`, bytes: room };
}

function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return "[unserializable]";
  }
}
