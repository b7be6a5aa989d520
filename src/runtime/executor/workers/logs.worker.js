// Runs INSIDE workerd, in each app's isolate, before any of the app's code (the shim imports it
// before app.js). Every console method is replaced, for good, by one that keeps the line with the
// op call whose code wrote it (DECISIONS §18): the call is found through an AsyncLocalStorage the
// shim enters for each call, so calls running side by side in one isolate keep their own lines,
// and so do their timers, fetches and waitUntil work while the call is open.
//
// Nothing goes to workerd's own stdout or stderr any more: an app printing in a loop would
// otherwise make Node read and drop its output, on Node's event loop. Past the per-call cap
// a line costs one increment, so a logging loop costs the app's CPU and nothing else.
// Lines written outside any call (the module's top level, work left running after a call was
// answered) are dropped: there is no call to show them with.
import { AsyncLocalStorage } from "node:async_hooks";

/** The per-call cap of DECISIONS §18; Node checks it again, as it checks all a shim says. */
const MAX_LINES = 64;
const MAX_BYTES = 16 * 1024;

const LEVELS = { debug: "debug", trace: "debug", log: "info", info: "info", dir: "info", dirxml: "info", table: "info", warn: "warn", error: "error" };

const calls = new AsyncLocalStorage();
const encoder = new TextEncoder();
// Bound to module scope now: app code may replace the globals later.
const stringify = JSON.stringify;
const now = Date.now;

/** One call's lines: [level, time, message, cut?], and how many more were written than kept. */
class Capture {
  lines = [];
  bytes = 0;
  dropped = 0;
  open = true;
  /** At its cap: every line more is only counted. */
  full = false;
}

/**
 * How many calls run in this isolate now, and the capture of the one that started with no other
 * running (null once another starts, until one starts alone again). A count and a reference, not a
 * Set: app code in this isolate may replace Set's methods, never these.
 */
let running = 0;
let sole = null;

function track(capture, runs) {
  running += runs ? 1 : -1;
  sole = runs && running === 1 ? capture : null;
}

/** Runs `fn` (the op) with its console lines kept in `capture`. */
export async function capturing(capture, fn) {
  track(capture, true);
  try {
    return await calls.run(capture, fn);
  } finally {
    track(capture, false);
  }
}

export function newCapture() {
  return new Capture();
}

/** Closes the capture; what a result carries of it, or undefined when nothing was written. */
export function take(capture) {
  capture.open = false;
  if (capture.lines.length === 0 && capture.dropped === 0) return undefined;
  return { lines: capture.lines, dropped: capture.dropped };
}

/**
 * The line's call, when it still has room; counts the line as dropped when it does not. Past the
 * cap, with one call running, this is all a console call costs besides its arguments' array.
 */
function roomFor() {
  // One call running, and at its cap: the line is dropped whoever wrote it, so it is counted to
  // that call without asking the AsyncLocalStorage (~70 ns, most of what a dropped line cost). A
  // line from work an earlier call left running, dropped either way, then adds to this count.
  if (sole !== null && sole.full && sole.open) {
    sole.dropped += 1;
    return undefined;
  }
  const capture = calls.getStore();
  if (capture === undefined || !capture.open) return undefined;
  if (capture.lines.length < MAX_LINES && capture.bytes < MAX_BYTES) return capture;
  capture.full = true;
  capture.dropped += 1;
  return undefined;
}

function write(capture, level, args) {
  const room = MAX_BYTES - capture.bytes;
  const { text, bytes, cut } = fit(format(args, room), room);
  capture.bytes += bytes;
  // A cut line says so: Node trims its end, which may hold the first part of a secret.
  capture.lines[capture.lines.length] = cut ? [level, now(), text, 1] : [level, now(), text];
}

/** The text, cut to `room` UTF-8 bytes (never inside a character), and its length in bytes. */
function fit(text, room) {
  // Three bytes per UTF-16 unit at most: short text needs no count.
  if (text.length * 3 <= room) return { text, bytes: encoder.encode(text).length, cut: false };
  const buffer = new Uint8Array(room);
  const { read, written } = encoder.encodeInto(text, buffer);
  return { text: text.slice(0, read), bytes: written, cut: read < text.length };
}

/** The arguments as one line, as Node's console would print them, stopping once past `room`. */
function format(args, room) {
  let text = "";
  for (let i = 0; i < args.length && text.length <= room; i += 1) {
    text += (i === 0 ? "" : " ") + show(args[i]);
  }
  return text;
}

function show(value) {
  if (typeof value === "string") return value;
  if (value instanceof Error) return String(value.stack ?? `${value.name}: ${value.message}`);
  if (value === null || typeof value !== "object") return typeof value === "function" ? `[Function ${value.name || "anonymous"}]` : String(value);
  try {
    return stringify(value, (_key, v) => (typeof v === "bigint" ? `${v}n` : v)) ?? String(value);
  } catch {
    // A cycle, or a getter that throws.
    return Object.prototype.toString.call(value);
  }
}

for (const name of Object.getOwnPropertyNames(console)) {
  if (typeof console[name] !== "function") continue;
  const level = LEVELS[name];
  const method =
    level !== undefined
      ? (...args) => {
          const capture = roomFor();
          if (capture !== undefined) write(capture, level, args);
        }
      : name === "assert"
        ? (condition, ...args) => {
            if (condition) return;
            const capture = roomFor();
            if (capture === undefined) return;
            // Built by index: app code may have replaced Array's methods and its iterator.
            const line = ["Assertion failed"];
            for (let i = 0; i < args.length; i += 1) line[i + 1] = args[i];
            write(capture, "error", line);
          }
        : () => undefined;
  Object.defineProperty(console, name, { value: method, writable: false, configurable: false, enumerable: true });
}
