// Runs INSIDE workerd, in each app's isolate, as its main module. The supervisor opens one
// session per isolate and runs every op call through it: the session builds the app's env from
// the capabilities it imported, bound to that call's invocation id, and reports a throw.
//
// Write-behind: Node may hold room in the app's cap for a call (its allowance). KV.set within
// it resolves at once and the write travels with the op's result, or sooner (WriteBehind); Node
// commits it before anyone sees that result, and turns the result into an error if it cannot.
// Whatever could be refused (a key or value out of bounds, past the allowance, a read op) goes
// to Node straight away as before, so the app sees every refusal at the call that caused it.
// First: it removes V8's gc() from the global scope before any of the app's code runs.
//
// Background work (timers, fetches, ctx.waitUntil) still pending when an op answers is reported
// with the result (`bg`), and while no call of this isolate is in flight, each time it starts or
// ends: the pool charges a process that stalls to the apps whose work was pending (blame.ts).
import { collect } from "./brickyard-gc.js";
// Second: it wraps the timer globals and fetch before app code can take the originals.
import { background, track } from "./brickyard-background.js";
// Third: it takes over console, so each call's lines go back with its result.
import { capturing, newCapture, take } from "./brickyard-logs.js";
import app from "./app.js";
import { KvCache } from "./brickyard-kv-cache.js";
import { abortIsolate, RpcTarget, WorkerEntrypoint } from "cloudflare:workers";


export class Shim extends WorkerEntrypoint {
  open(bindings) {
    return new Session(bindings, this.env, this.ctx);
  }

  evict() {
    abortIsolate("idle isolate evicted");
  }
}

export default {
  fetch() {
    return new Response("op calls go through the supervisor's session", { status: 404 });
  },
};

const decoder = new TextDecoder();
const encoder = new TextEncoder();

// An isolate collects its garbage in full after `everyCalls` op calls, and no sooner than
// `minIntervalMs` after its last collection (GC_POLICY, from ExecutorTuning). The Request,
// Response and body objects of a call are small in V8's heap but hold native memory V8 does not
// weigh, so V8 saw no reason to collect them: a busy app's process grew ~7 KB a call (700 MiB
// after 75,000 calls) until recycled. A collection stops the whole process (~1–2 ms for a small
// heap, ~120 ms for 100 MiB of live objects), so the interval bounds what a big heap costs the
// apps beside it, and the garbage a busy app leaves is what its calls of one interval made.
let callsSinceCollect = 0;
let lastCollect = Date.now();

// Op calls of this isolate in flight: while there are any, their results carry the count.
let inflight = 0;
// The newest session's Bindings reports changes that come when no call is in flight.
let report = null;
background.listen((n) => {
  if (inflight > 0 || report === null) return;
  try {
    void Promise.resolve(report(n)).catch(() => undefined);
  } catch {
    // Its session was let go (a rotated channel): the next result carries the count.
  }
});

// Past this many queued writes, the next one sends them (keeps a frame's header small).
const MAX_QUEUED_WRITES = 256;
// Node's key rule (at most 512 bytes); a key that might break it goes the straight way.
const MAX_KEY_BYTES = 512;

class Session extends RpcTarget {
  #bindings;
  #env;
  #ctx;
  // KV reads of this app, at most 256 KiB. Per session, not per isolate: the invalidations a
  // session is handed come over its own channel, so a new session must not trust an old cache.
  #cache = new KvCache(256 * 1024, 2000);

  constructor(bindings, env, ctx) {
    super();
    // A stub passed into a call is released when that call returns; the session outlives it.
    this.#bindings = bindings.dup();
    this.#env = env;
    this.#ctx = ctx;
  }

  // The supervisor let go of this session: let go of its Bindings in turn.
  [Symbol.dispose]() {
    this.#bindings[Symbol.dispose]();
  }

  async run(op, headers, body, invalidations, allowance) {
    // Writes committed elsewhere before this call began: this op must not read around them.
    const shared = this.#cache;
    if (invalidations.clear !== null) shared.clear(invalidations.clear);
    for (const [key, epoch] of invalidations.keys) shared.invalidate("", key, epoch);
    // A call made for a visitor of a custom domain reads their own store: the session's cache
    // holds the app's values, so it gets an empty one of its own that dies with it.
    const cache = headers["x-svc-store"] === "visitor" ? new KvCache(256 * 1024, 2000) : shared;
    const request = new Request(`https://app.invalid/api/${encodeURIComponent(op)}`, { method: "POST", headers, body });
    const live = { done: false };
    const call = binder(this.#bindings, headers["x-svc-invocation"] ?? "");
    const writes = new WriteBehind(allowance, call, cache);
    const appEnv = makeEnv(this.#env, call, cache, live, writes);
    const bindings = this.#bindings;
    report = (n) => bindings.background(n);
    inflight += 1;
    const capture = newCapture();
    let result;
    let queued = null;
    try {
      result = await capturing(capture, () => answer(request, appEnv, appContext(this.#ctx)));
    } finally {
      // Node refuses a finished invocation's binding calls; cached reads must refuse them too.
      live.done = true;
      // The writes still queued go with the result. Taken while the call is still in flight:
      // their flush timer, cleared here, counts as background work, and a count falling to zero
      // with no call in flight is reported in a frame of its own (0.64 frames a call, for nothing,
      // under eight clients of an app that writes).
      queued = writes.finish();
      inflight -= 1;
    }
    const logs = take(capture);
    if (logs !== undefined) result.logs = logs;
    // Date.now() stands still while code runs, but each call is a new event: this is wall time.
    const gc = this.#env.GC_POLICY;
    if (++callsSinceCollect >= gc.everyCalls && Date.now() - lastCollect >= gc.minIntervalMs) {
      callsSinceCollect = 0;
      lastCollect = Date.now();
      setTimeout(collect, 0);
    }
    // Those sent already must have committed.
    if (!(await writes.settled())) return { outcome: "threw", message: "CapabilityError: the operation's storage writes could not be committed", stack: "", bg: background.now(), logs };
    return { ...result, ...(queued ?? {}), bg: background.now() };
  }
}

/** The app's answer to one op call, or what it threw, as a result frame carries it. */
async function answer(request, appEnv, ctx) {
  try {
    if (typeof app?.fetch !== "function") throw new TypeError("the module's default export has no fetch function");
    const res = await app.fetch(request, appEnv, ctx);
    if (!(res instanceof Response)) throw new TypeError("default.fetch must return a Response");
    return { outcome: "response", status: res.status, contentType: res.headers.get("content-type") ?? "", body: await res.text() };
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { outcome: "threw", message, stack: String(error?.stack ?? "") };
  }
}

/** The `ctx` an app's fetch gets: the session's, with each waitUntil promise counted as background work. */
function appContext(ctx) {
  return Object.freeze({
    waitUntil(promise) {
      ctx.waitUntil(track(promise));
    },
    passThroughOnException() {
      ctx.passThroughOnException?.();
    },
    get props() {
      return ctx.props;
    },
  });
}

/** Calls a binding in Node as this invocation; a refusal throws with its kind. */
function binder(bindings, invocation) {
  return async function call(path, payload, extra = {}) {
    const res = await bindings.call({ invocation, path, ...extra }, payload ?? "");
    if (res.status >= 200 && res.status < 300) return res;
    let failure = null;
    try {
      failure = JSON.parse(decoder.decode(res.body));
    } catch {
      // not an envelope
    }
    const error = new Error(failure?.error?.message ?? `capability call failed (${res.status})`);
    error.name = "CapabilityError";
    error.kind = failure?.error?.kind ?? "capability_error";
    throw error;
  };
}

/** One op call's KV writes that have not gone to Node yet, within the allowance Node holds. */
class WriteBehind {
  /** The values this call wrote, so that its own reads see them: key → bytes. */
  own = new Map();
  #queue = [];
  #left;
  #call;
  #cache;
  #timer = null;
  /** Settles true once every batch sent so far has committed, false once one has failed. */
  #sent = Promise.resolve(true);
  #failure = null;

  constructor(allowance, call, cache) {
    this.#left = allowance;
    this.#call = call;
    this.#cache = cache;
  }

  /** Takes a write that cannot be refused; false: send it the straight way. */
  offer(key, bytes) {
    if (this.#failure !== null || bytes.length > this.#left || this.#queue.length >= MAX_QUEUED_WRITES || !plainKey(key)) return false;
    this.#left -= bytes.length;
    this.#queue.push([key, bytes]);
    this.own.set(key, bytes);
    // An op that goes on to wait for something else sends its writes then, not at its end: others
    // see them about when they would have, and a crash meanwhile does not lose them.
    this.#timer ??= setTimeout(() => void this.flush().catch(() => undefined), 0);
    return true;
  }

  /** Sends what is queued and waits for every batch sent so far; throws what a failed one threw. */
  async flush() {
    const batch = this.#take();
    if (batch !== null) this.#sent = this.#sent.then((ok) => ok && this.#send(batch));
    if (!(await this.#sent)) throw this.#failure;
  }

  /** At the op's end: what is still queued, in the form a result carries it, or null. */
  finish() {
    return this.#take();
  }

  /** Whether every batch sent before the end committed. */
  settled() {
    return this.#sent;
  }

  async #send(batch) {
    try {
      const res = await this.#call("/kv/commit", batch.values, { writes: batch.writes });
      // This isolate's own writes: a read that started before them must not be cached after.
      if (typeof res.epoch === "number") for (const [key] of batch.writes) this.#cache.invalidate("", key, res.epoch);
      return true;
    } catch (error) {
      this.#failure = error;
      return false;
    }
  }

  #take() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#queue.length === 0) return null;
    const queue = this.#queue;
    this.#queue = [];
    const values = new Uint8Array(queue.reduce((n, [, bytes]) => n + bytes.length, 0));
    let at = 0;
    for (const [, bytes] of queue) {
      values.set(bytes, at);
      at += bytes.length;
    }
    return { writes: queue.map(([key, bytes]) => [key, bytes.length]), values };
  }
}

function plainKey(key) {
  // Half of a surrogate pair: Node refuses it, and the app must see that at its set().
  if (typeof key !== "string" || key.length === 0 || !key.isWellFormed()) return false;
  // Three UTF-8 bytes per UTF-16 unit at most: short keys need no count.
  return key.length * 3 <= MAX_KEY_BYTES || encoder.encode(key).length <= MAX_KEY_BYTES;
}

function makeEnv(env, call, cache, live, writes) {
  const text = (res) => decoder.decode(res.body);
  // This isolate's own write: a read that started before it must not be cached after it.
  const written = (key, res) => {
    if (typeof res.epoch === "number") cache.invalidate("", String(key), res.epoch);
    writes.own.delete(String(key));
  };
  const json = async (path, payload) => JSON.parse(text(await call(path, JSON.stringify(payload))));
  const out = { ...env.VARS };
  if (env.CAPS.includes("kv")) {
    out.KV = Object.freeze({
      async get(key) {
        let bytes = typeof key === "string" && !live.done ? (writes.own.get(key) ?? cache.get("", key)) : undefined;
        if (bytes === undefined) {
          const res = await call("/kv/get", "", { key });
          // Node sends an epoch with every read it lets the cache keep.
          if (typeof res.epoch === "number") cache.put("", key, res.body, res.epoch);
          bytes = res.body;
        }
        const body = decoder.decode(bytes);
        return body === "" ? null : JSON.parse(body);
      },
      async set(key, value) {
        const body = JSON.stringify(value);
        if (body === undefined) throw new TypeError("KV values must be JSON-serializable");
        const bytes = encoder.encode(body);
        if (!live.done && writes.offer(key, bytes)) return;
        // In order: what this call queued lands before this write does.
        await writes.flush();
        written(key, await call("/kv/set", bytes, { key: String(key) }));
      },
      async delete(key) {
        await writes.flush();
        const res = await call("/kv/delete", JSON.stringify({ key }));
        written(key, res);
        return JSON.parse(text(res)).deleted;
      },
      async list(options = {}) {
        await writes.flush();
        return json("/kv/list", options);
      },
    });
  }
  if (env.CAPS.includes("blob")) {
    out.BLOB = Object.freeze({
      async put(key, data, options = {}) {
        // Any body fetch() would take (string, buffer, view, Blob, stream) becomes bytes here.
        const bytes = await new Response(data).arrayBuffer();
        await call("/blob/put", bytes, { key: String(key), contentType: options.contentType ?? "application/octet-stream" });
      },
      async get(key) {
        const res = await call("/blob/get", JSON.stringify({ key }));
        if (res.status === 204) return null;
        const data = res.body.buffer.slice(res.body.byteOffset, res.body.byteOffset + res.body.byteLength);
        return { data, contentType: res.contentType || "application/octet-stream", size: data.byteLength };
      },
      delete: (key) => json("/blob/delete", { key }).then((r) => r.deleted),
      list: (options = {}) => json("/blob/list", options),
    });
  }
  if (env.CAPS.includes("log")) {
    out.LOG = Object.freeze({
      emit: (level, message, data) => json("/log/emit", { level, message, data }).then(() => undefined),
    });
  }
  return Object.freeze(out);
}
