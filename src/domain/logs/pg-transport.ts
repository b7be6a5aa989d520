import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { SECOND } from "../../config/clock.ts";
import { LOG_LEVELS, type LogLevel, type LogLine } from "../../runtime/index.ts";
import { NOTIFY_PAYLOAD_MAX, type PgNotifier } from "../../store/notify.ts";
import type { AppLogs, LogTransport } from "./logs.ts";

/** How often an instance says again that it follows an app, and how long another believes it. */
export const WANT_EVERY_MS = 20 * SECOND;
export const WANT_FOR_MS = 3 * WANT_EVERY_MS;

/** A line on the wire: [time, level, op, requestId, message]. */
type WireLine = [number, LogLevel, string, string | null, string];
type Wire = { k: "want"; i: string; a: string } | { k: "lines"; i: string; a: string; l: WireLine[] };

/**
 * Log lines between instances over PostgreSQL NOTIFY, on their own channel. An instance sends an
 * app's lines only while another has said, within WANT_FOR_MS, that someone there follows it: an
 * app nobody follows costs no NOTIFY, however much it logs. A line too long for one notification
 * reaches other instances' followers cut short; the instance that ran the call keeps it whole.
 */
export async function pgLogTransport(logs: AppLogs, notifier: PgNotifier, log: Logger, now: () => number = Date.now): Promise<LogTransport> {
  const self = randomBytes(9).toString("base64url");
  /** Apps followed elsewhere → until when we believe it. */
  const wanted = new Map<string, number>();
  /** Apps followed here → by how many streams. */
  const following = new Map<string, number>();
  const send = (wire: Wire) => notifier.notify(JSON.stringify(wire)).catch((error: unknown) => log.warn({ err: error, appId: wire.a }, "app logs: NOTIFY failed"));

  await notifier.listen((payload) => {
    const wire = parse(payload);
    if (wire === null) {
      log.warn("app logs: unreadable notification");
      return;
    }
    if (wire.i === self) return;
    if (wire.k === "want") wanted.set(wire.a, now() + WANT_FOR_MS);
    else logs.deliver(wire.a, wire.l.map(([time, level, op, requestId, message]) => ({ time, level, op, requestId, message })));
  });
  const timer = setInterval(() => {
    for (const appId of following.keys()) void send({ k: "want", i: self, a: appId });
    const at = now();
    for (const [appId, until] of wanted) if (until <= at) wanted.delete(appId);
  }, WANT_EVERY_MS);
  timer.unref();

  return {
    publish(appId, lines) {
      const until = wanted.get(appId);
      if (until === undefined || until <= now()) return;
      for (const batch of batches(lines)) void send({ k: "lines", i: self, a: appId, l: batch });
    },
    follow(appId) {
      const n = following.get(appId) ?? 0;
      following.set(appId, n + 1);
      if (n === 0) void send({ k: "want", i: self, a: appId });
      let stopped = false;
      return () => {
        if (stopped) return;
        stopped = true;
        const left = (following.get(appId) ?? 1) - 1;
        if (left === 0) following.delete(appId);
        else following.set(appId, left);
      };
    },
    async close() {
      clearInterval(timer);
      await notifier.close();
    },
  };
}

/** The lines in notifications of at most NOTIFY_PAYLOAD_MAX bytes, each line cut to fit one alone. */
function batches(lines: readonly LogLine[]): WireLine[][] {
  const out: WireLine[][] = [];
  let batch: WireLine[] = [];
  let size = 0;
  // Room for the envelope around the lines: {"k":"lines","i":…,"a":…,"l":[…]}.
  const room = NOTIFY_PAYLOAD_MAX - 200;
  for (const line of lines) {
    const wire = fitted([line.time, line.level, line.op, line.requestId, line.message], room);
    const bytes = Buffer.byteLength(JSON.stringify(wire)) + 1;
    if (size + bytes > room && batch.length > 0) {
      out.push(batch);
      batch = [];
      size = 0;
    }
    batch.push(wire);
    size += bytes;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

function fitted(wire: WireLine, room: number): WireLine {
  let json = Buffer.byteLength(JSON.stringify(wire));
  if (json <= room) return wire;
  let message = wire[4];
  // JSON escapes can take six bytes a character: cut by what is over, until it fits.
  while (json > room && message.length > 0) {
    message = message.slice(0, Math.max(0, message.length - Math.ceil((json - room) / 2) - 1));
    json = Buffer.byteLength(JSON.stringify([...wire.slice(0, 4), `${message}…`]));
  }
  return [wire[0], wire[1], wire[2], wire[3], `${message}…`];
}

function parse(payload: string): Wire | null {
  try {
    const wire = JSON.parse(payload) as Partial<Wire>;
    if (typeof wire.i !== "string" || typeof wire.a !== "string") return null;
    if (wire.k === "want") return wire as Wire;
    if (wire.k === "lines" && Array.isArray(wire.l) && wire.l.every(isWireLine)) return wire as Wire;
    return null;
  } catch {
    return null;
  }
}

function isWireLine(line: unknown): line is WireLine {
  return Array.isArray(line) && typeof line[0] === "number" && LOG_LEVELS.includes(line[1] as LogLevel) && typeof line[2] === "string" && (line[3] === null || typeof line[3] === "string") && typeof line[4] === "string";
}
