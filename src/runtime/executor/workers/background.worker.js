// Runs INSIDE workerd, in each app's isolate, before any of the app's code (the shim imports it
// right after gc.worker.js). Counts the work an app leaves running: timers, intervals,
// scheduler.wait, fetches and ctx.waitUntil promises (the shim hands those to track()). When a
// process stalls after every call was answered, the pool charges the apps whose work was still
// pending (blame.ts) instead of every app that ran there lately.
//
// A settled piece of work stops counting one macrotask later, so the continuations it wakes
// (`fetch(u).then(spin)`, the rest of an async timer callback) still count while they run: a
// spinning continuation never lets that macrotask run. The originals stay in this module's scope;
// app code only ever reaches the counting wrappers.

const native = {
  setTimeout: globalThis.setTimeout,
  setInterval: globalThis.setInterval,
  clearTimeout: globalThis.clearTimeout,
  clearInterval: globalThis.clearInterval,
  fetch: globalThis.fetch,
};

let pending = 0;
/** Moves with every change of `pending`, so Node can tell a late report from a newer one. */
let seq = 0;
/** Timer id → true for an interval (pending until cleared), false for a timeout. */
const timers = new Map();
/** Called with now() when the count moves between zero and not (see the shim's Session). */
let onChange = null;

function add() {
  seq += 1;
  if (pending++ === 0) onChange?.(now());
}

function remove() {
  if (pending === 0) return;
  seq += 1;
  if (--pending === 0) onChange?.(now());
}

/** The count as reported: [pending, seq]. */
function now() {
  return [pending, seq];
}

/** Stops counting one piece of work after the macrotask its continuations run in. */
function settleLater() {
  try {
    native.setTimeout.call(globalThis, remove, 0);
  } catch {
    // No context to schedule in (the isolate is going away): count it off now.
    remove();
  }
}

/** Counts `value` while it is a pending promise; returns it unchanged. */
export function track(value) {
  if (value === null || typeof value !== "object" || typeof value.then !== "function") return value;
  add();
  let settled = false;
  const done = () => {
    if (settled) return;
    settled = true;
    settleLater();
  };
  try {
    value.then(done, done);
  } catch {
    done();
  }
  return value;
}

export const background = {
  /** [pending, seq]: what a result or a report carries. */
  now,
  /** The shim reports changes through this; null: nobody is listening. */
  listen(fn) {
    onChange = fn;
  },
};

function wrap(fn, settle) {
  if (typeof fn !== "function") return fn;
  return function (...args) {
    let result;
    try {
      result = fn.apply(this, args);
    } finally {
      // An async callback goes on counting until its promise settles.
      if (settle) {
        if (result !== null && typeof result === "object" && typeof result.then === "function") {
          track(result);
        }
        settleLater();
      }
    }
    return result;
  };
}

globalThis.setTimeout = function setTimeout(fn, ms, ...args) {
  let id;
  const run = wrap(function () {
    timers.delete(id);
    return fn.apply(this, args);
  }, true);
  id = native.setTimeout.call(globalThis, run, ms);
  timers.set(id, false);
  add();
  return id;
};

globalThis.setInterval = function setInterval(fn, ms, ...args) {
  const id = native.setInterval.call(globalThis, wrap(typeof fn === "function" ? () => fn(...args) : fn, false), ms);
  timers.set(id, true);
  add();
  return id;
};

function clear(id) {
  if (!timers.has(id)) return;
  timers.delete(id);
  remove();
}

globalThis.clearTimeout = function clearTimeout(id) {
  native.clearTimeout.call(globalThis, id);
  clear(id);
};

globalThis.clearInterval = function clearInterval(id) {
  native.clearInterval.call(globalThis, id);
  clear(id);
};

if (typeof native.fetch === "function") {
  globalThis.fetch = function fetch(...args) {
    return track(native.fetch.apply(globalThis, args));
  };
}

const scheduler = globalThis.scheduler;
if (scheduler !== undefined && typeof scheduler.wait === "function") {
  const wait = scheduler.wait;
  try {
    Object.defineProperty(scheduler, "wait", { value: (...args) => track(wait.apply(scheduler, args)), writable: true, configurable: true });
  } catch {
    // Not writable here: scheduler.wait goes uncounted, as any other uncounted work (blame.ts).
  }
}
