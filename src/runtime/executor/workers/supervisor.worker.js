// Runs INSIDE workerd. Loads each (app, revision, secrets version) into its own isolate through
// the Worker Loader and runs op calls in it. Kept small: policy lives in Node.
//
// Node holds one WebSocket per process (the channel) and sends every op call over it. The
// channel's request stays open, so its IoContext can keep one session stub per isolate: a call
// on a live session costs a fraction of a fresh cross-isolate request, which is what made the
// loader hop expensive. Binding calls (env.KV …) come back from the app isolate to this
// context over the session's Bindings stub and go on to Node over the same channel.
//
// KV reads are cached inside each app isolate (kv-cache.worker.js, rules there). Node sends the
// invalidations of committed writes with its next frame; this side hands each session the ones
// for its app with its next op call, before the op runs.

import { RpcTarget } from "cloudflare:workers";

export { Egress } from "./egress.js";

// A session not called for a while gets a full clear rather than an endless list.
const MAX_PENDING_INVALIDATIONS = 256;

const CONTROL = "/__brickyard/";

// As in the app shim (GC_POLICY there): frames and RPC results hold native memory V8 does not
// weigh, so without a nudge this isolate grew by a few KB a call. No app code runs here, so the
// gc() that --expose-gc gives is used as it is, and its heap is ours and small (~1 ms a time).
const GC_EVERY_FRAMES = 2000;
let framesSinceCollect = 0;

// Isolate key → the loader name its isolate was built under, and the app it was built for; one
// entry per isolate this process's loader holds, until Node evicts it. Process-wide, as the
// loader is. A staged isolate taken over by its revision keeps its staged name: eviction aborts
// that name, and a channel opened later finds the isolate there instead of building the revision
// again. Eviction touches no other name: asking the loader for a name it never built registers a
// build that fails, kept like any other, and every later call under that name failed with it.
const built = new Map();
function loaderName(key) {
  const name = built.get(key)?.name;
  if (name !== undefined) return name;
  const n = refetches.get(key);
  return n === undefined ? key : `${key}#${n}`;
}

// workerd's loader keeps what it built under a name, a failed build included, for the life of the
// process. A build that failed because Node could not give its code (its store unreachable for a
// moment), not because of the app's code, goes under a new name next time (`key#n`), so that the
// code is fetched again: otherwise every call of that revision here would fail until it idled out.
// Process-wide, as the loader is: a new channel still meets the old failure. One entry per such
// failure, at most REFETCH_KEYS of them (past that, the oldest key's next failure is rebuilt once more).
const refetches = new Map();
const REFETCH_KEYS = 10_000;
function refetchNextTime(key) {
  built.delete(key);
  refetches.set(key, (refetches.get(key) ?? 0) + 1);
  if (refetches.size > REFETCH_KEYS) refetches.delete(refetches.keys().next().value);
}

export default {
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (pathname === CONTROL + "ping") return new Response("ok");
    if (pathname === CONTROL + "channel" && request.headers.get("upgrade") === "websocket") return openChannel(env, ctx);
    return new Response("not found", { status: 404 });
  },
};

// A frame is [u32 header length][header JSON][payload bytes], in both directions. A result
// may carry the op's KV writes after its body (write-behind): header.bodyBytes says where the
// body ends, header.writes lists [key, byte length] of the values that follow.
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function bytesOf(payload) {
  return payload === undefined ? new Uint8Array(0) : typeof payload === "string" ? encoder.encode(payload) : new Uint8Array(payload);
}

function encode(header, payload, tail) {
  const body = bytesOf(payload);
  if (tail !== undefined) header.bodyBytes = body.length;
  const head = encoder.encode(JSON.stringify(header));
  const rest = tail ?? new Uint8Array(0);
  const frame = new Uint8Array(4 + head.length + body.length + rest.length);
  new DataView(frame.buffer).setUint32(0, head.length);
  frame.set(head, 4);
  frame.set(body, 4 + head.length);
  frame.set(rest, 4 + head.length + body.length);
  return frame;
}

function decode(data) {
  const bytes = new Uint8Array(data);
  const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0);
  return { header: JSON.parse(decoder.decode(bytes.subarray(4, 4 + length))), payload: bytes.subarray(4 + length) };
}

function openChannel(env, ctx) {
  const [client, socket] = Object.values(new WebSocketPair());
  socket.accept();
  const channel = new Channel(env, ctx, socket);
  socket.addEventListener("message", (event) => channel.receive(event.data));
  socket.addEventListener("close", () => {
    channel.closed();
    // Answering the close ends this request, and with it everything its context holds.
    socket.close();
  });
  return new Response(null, { status: 101, webSocket: client });
}

class Channel {
  constructor(env, ctx, socket) {
    this.env = env;
    this.ctx = ctx;
    this.socket = socket;
    /** isolate key → what this context holds of it: loader stubs, session, pending invalidations */
    this.sessions = new Map();
    /** binding call id → resolve */
    this.waiting = new Map();
    /** app id → the sessions of its isolates here (each revision and secrets version has one) */
    this.appSessions = new Map();
    this.nextId = 0;
  }

  send(header, payload, tail) {
    this.socket.send(encode(header, payload, tail));
  }

  receive(data) {
    if (++framesSinceCollect >= GC_EVERY_FRAMES && typeof globalThis.gc === "function") {
      framesSinceCollect = 0;
      setTimeout(globalThis.gc, 0);
    }
    const { header, payload } = decode(data);
    // KV writes committed since Node last wrote here, queued before anything in this frame runs.
    if (header.kvAll !== undefined) for (const held of this.sessions.values()) held.invalidations.clearAll(header.kvAll);
    // A null key: the app's values changed on another instance, key unknown.
    for (const [appId, key, epoch] of header.kv ?? []) {
      for (const held of this.appSessions.get(appId) ?? []) {
        if (key === null) held.invalidations.clearAll(epoch);
        else held.invalidations.add(key, epoch);
      }
    }
    if (header.t === "reply") {
      const resolve = this.waiting.get(header.id);
      this.waiting.delete(header.id);
      resolve?.({ status: header.status, contentType: header.contentType ?? "", body: payload, epoch: header.epoch });
    } else if (header.t === "run") {
      void this.run(header, payload);
    } else if (header.t === "evict") {
      void this.evict(header);
    }
  }

  closed() {
    for (const resolve of this.waiting.values()) resolve({ status: 503, contentType: "", body: new Uint8Array(0) });
    this.waiting.clear();
  }

  /** A binding call from an app isolate, on to Node; resolves with Node's answer. */
  bind(appId, header, payload) {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.send({ ...header, t: "bind", id, appId }, payload);
    });
  }

  /** The isolate under `key`, built now if need be; undefined for a warm-up with nothing to build it from. */
  session(key, header) {
    let held = this.sessions.get(key);
    // Node's word that the isolate staged under `adopt` runs exactly this revision's code: it
    // goes on under the revision's key (and its staged loader name), built or still building.
    // Only for the app it was built for, and only where the revision has no isolate of its own.
    const staged = header.adopt === undefined ? undefined : built.get(header.adopt);
    if (held === undefined && staged?.appId === header.appId && !built.has(key)) {
      built.delete(header.adopt);
      built.set(key, staged);
      held = this.sessions.get(header.adopt);
      if (held !== undefined) {
        this.sessions.delete(header.adopt);
        this.sessions.set(key, held);
        held.bindings.rekey(key);
      }
    }
    // A warm-up has no invocation to fetch code with, and a failed fetch would stay with the key
    // in the loader: with no code (a staged isolate gone before it could be taken over, or
    // Node's read failed), the first call builds the isolate instead.
    if (held === undefined && header.warm === true && header.code == null) return undefined;
    if (held === undefined) {
      const fetch = { failed: false };
      const name = loaderName(key);
      built.set(key, { name, appId: header.appId });
      const worker = this.env.LOADER.get(name, async () => {
        if (header.code != null) return this.workerCode(header.caps, header.code);
        try {
          return this.workerCode(header.caps, await this.fetchCode(header.invocation));
        } catch (error) {
          fetch.failed = true;
          throw error;
        }
      });
      const entry = worker.getEntrypoint("Shim");
      // An RpcPromise, awaited once; the handles are released explicitly in drop().
      const bindings = new Bindings(this, header.appId, key);
      const session = entry.open(bindings).then((stub) => stub);
      held = { appId: header.appId, worker, entry, session, bindings, invalidations: new Invalidations(), fetch };
      this.sessions.set(key, held);
      let ofApp = this.appSessions.get(header.appId);
      if (ofApp === undefined) this.appSessions.set(header.appId, (ofApp = new Set()));
      ofApp.add(held);
    }
    return held;
  }

  /** Releases everything this context holds of an isolate, so an evicted one can be freed. */
  async drop(key) {
    const held = this.sessions.get(key);
    if (held === undefined) return;
    this.sessions.delete(key);
    const ofApp = this.appSessions.get(held.appId);
    ofApp?.delete(held);
    if (ofApp?.size === 0) this.appSessions.delete(held.appId);
    const stub = await held.session.catch(() => null);
    stub?.[Symbol.dispose]?.();
    held.entry[Symbol.dispose]?.();
    held.worker[Symbol.dispose]?.();
  }

  async run(header, payload) {
    const { id, key } = header;
    let result;
    let held;
    try {
      held = this.session(key, header);
      const session = await held?.session;
      // A warm-up only builds the isolate (its module's top level has run by now) and its session.
      result = header.warm === true || held === undefined ? { outcome: "warm" } : await session.run(header.op, header.headers, payload, held.invalidations.take(), header.allowance ?? 0);
    } catch (error) {
      // Not the app's own throw (the shim catches those): the module failed to load or evaluate
      // (syntax error, top-level throw), or the isolate went away. Start over next time. A build
      // that failed because Node could not give its code is ours, not the app's: no app code ran.
      const unavailable = held?.fetch.failed === true;
      if (unavailable) refetchNextTime(key);
      void this.drop(key);
      result = unavailable ? { outcome: "unavailable" } : { outcome: "threw", message: String(error?.message ?? error), stack: String(error?.stack ?? "") };
    }
    const { body, writes, values, ...rest } = result;
    if (writes === undefined) this.send({ ...rest, t: "result", id }, body ?? "");
    else this.send({ ...rest, t: "result", id, writes }, body ?? "", values);
  }

  async fetchCode(invocation) {
    // The code endpoint answers for the invocation's own (app, revision) and nothing else.
    const res = await this.env.INTERNAL.fetch("http://internal/code", { headers: { "x-svc-invocation": invocation } });
    if (!res.ok) throw new Error(`code unavailable (${res.status})`);
    return res.json();
  }

  workerCode(caps, code) {
    return {
      compatibilityDate: this.env.COMPATIBILITY_DATE,
      // Built-ins (node:buffer, node:events, …) only for modules that import them.
      // nodejs_als: the shim keeps each call's console lines apart with an AsyncLocalStorage.
      compatibilityFlags: code.nodeCompat ? ["nodejs_compat"] : ["nodejs_als"],
      mainModule: "brickyard-shim.js",
      modules: {
        "brickyard-shim.js": this.env.SHIM,
        "brickyard-gc.js": this.env.GC_HOOK,
        "brickyard-background.js": this.env.BACKGROUND,
        "brickyard-logs.js": this.env.LOGS,
        "brickyard-kv-cache.js": this.env.KV_CACHE,
        "app.js": code.module,
      },
      // GC_POLICY is the shim's own (when to collect); the app's env is built from CAPS and VARS only.
      env: { CAPS: caps, VARS: code.vars ?? {}, GC_POLICY: this.env.GC_POLICY },
      // Every fetch() and connect() of the app goes through Egress, which knows what it declared.
      globalOutbound: this.ctx.exports.Egress({ props: { appId: code.appId, origins: code.origins ?? [] } }),
    };
  }

  async evict({ id, key }) {
    await this.drop(key);
    // Under the name it was built with: `key#n` after a failed code fetch, the staged name after a
    // takeover. A key never built here (a warm-up that found nothing to build) has nothing to abort.
    const name = built.get(key)?.name;
    built.delete(key);
    if (name !== undefined) {
      try {
        const worker = this.env.LOADER.get(name, () => {
          throw new Error("not loaded");
        });
        await worker.getEntrypoint("Shim").evict();
      } catch {
        // abortIsolate() ends the call with an error.
      }
    }
    this.send({ t: "evicted", id });
  }
}

/**
 * What an app isolate's env.KV/BLOB/LOG call into: one per session, so the app id a binding
 * call carries is the isolate's own, whatever the app's code does. Node checks it against the
 * invocation id, which alone decides whose data is touched.
 */
class Bindings extends RpcTarget {
  #channel;
  #appId;
  #key;

  constructor(channel, appId, key) {
    super();
    this.#channel = channel;
    this.#appId = appId;
    this.#key = key;
  }

  call(header, payload) {
    const { invocation, path, key, contentType, writes } = header;
    return this.#channel.bind(this.#appId, { invocation: String(invocation), path: String(path), key, contentType, writes }, payload);
  }

  /** A staged isolate taken over by its revision reports under the revision's key from now on. */
  rekey(key) {
    this.#key = key;
  }

  /** The isolate's background work started or ended while none of its calls was in flight: [pending, seq]. */
  background(now) {
    const [pending, seq] = Array.isArray(now) ? now : [];
    if (Number.isInteger(pending) && Number.isInteger(seq)) this.#channel.send({ t: "bg", key: this.#key, appId: this.#appId, bg: [pending, seq] });
  }
}

/** The KV writes a session's isolate has not heard of yet: [key, epoch] pairs, or clear all. */
class Invalidations {
  #keys = [];
  #clear = null;

  add(key, epoch) {
    if (this.#clear !== null) this.#clear = Math.max(this.#clear, epoch);
    else if (this.#keys.push([key, epoch]) > MAX_PENDING_INVALIDATIONS) this.clearAll(epoch);
  }

  clearAll(epoch) {
    this.#keys = [];
    this.#clear = Math.max(this.#clear ?? 0, epoch);
  }

  take() {
    const out = { keys: this.#keys, clear: this.#clear };
    this.#keys = [];
    this.#clear = null;
    return out;
  }
}
