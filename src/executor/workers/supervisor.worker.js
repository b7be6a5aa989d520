// Runs INSIDE workerd. Loads each (app, revision, secrets version) into its own isolate through
// the Worker Loader and runs op calls in it. Kept small: policy lives in Node.
//
// Node holds one WebSocket per process (the channel) and sends every op call over it. The
// channel's request stays open, so its IoContext can keep one session stub per isolate: a call
// on a live session costs a fraction of a fresh cross-isolate request, which is what made the
// loader hop expensive. Binding calls (env.KV …) come back from the app isolate to this
// context over the session's Bindings stub and go on to Node over the same channel.

import { RpcTarget } from "cloudflare:workers";
import { KvCache } from "./kv-cache.js";

export { Egress } from "./egress.js";

const CONTROL = "/__brickyard/";

export default {
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (pathname === CONTROL + "ping") return new Response("ok");
    if (pathname === CONTROL + "channel" && request.headers.get("upgrade") === "websocket") return openChannel(env, ctx);
    return new Response("not found", { status: 404 });
  },
};

// A frame is [u32 header length][header JSON][payload bytes], in both directions.
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function encode(header, payload) {
  const head = encoder.encode(JSON.stringify(header));
  const body = payload === undefined ? new Uint8Array(0) : typeof payload === "string" ? encoder.encode(payload) : new Uint8Array(payload);
  const frame = new Uint8Array(4 + head.length + body.length);
  new DataView(frame.buffer).setUint32(0, head.length);
  frame.set(head, 4);
  frame.set(body, 4 + head.length);
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
    /** isolate key → Promise of its session stub */
    this.sessions = new Map();
    /** binding call id → resolve */
    this.waiting = new Map();
    /** invocation id → app id, for the op calls running here now (cache hits check it) */
    this.running = new Map();
    this.cache = new KvCache();
    this.nextId = 0;
  }

  send(header, payload) {
    this.socket.send(encode(header, payload));
  }

  receive(data) {
    const { header, payload } = decode(data);
    // KV writes committed since Node last wrote here; dropped before anything in this frame runs.
    if (header.kvAll !== undefined) this.cache.clear(header.kvAll);
    for (const [appId, key, epoch] of header.kv ?? []) this.cache.invalidate(appId, key, epoch);
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

  session(key, header) {
    let held = this.sessions.get(key);
    if (held === undefined) {
      const worker = this.env.LOADER.get(key, async () => this.workerCode(header.caps, header.code ?? (await this.fetchCode(header.invocation))));
      const entry = worker.getEntrypoint("Shim");
      // An RpcPromise, awaited once; the handles are released explicitly in drop().
      const session = entry.open(new Bindings(this, header.appId, header.caps)).then((stub) => stub);
      held = { worker, entry, session };
      this.sessions.set(key, held);
    }
    return held.session;
  }

  /** Releases everything this context holds of an isolate, so an evicted one can be freed. */
  async drop(key) {
    const held = this.sessions.get(key);
    if (held === undefined) return;
    this.sessions.delete(key);
    const stub = await held.session.catch(() => null);
    stub?.[Symbol.dispose]?.();
    held.entry[Symbol.dispose]?.();
    held.worker[Symbol.dispose]?.();
  }

  async run(header, payload) {
    const { id, key } = header;
    let result;
    this.running.set(header.invocation, header.appId);
    try {
      const session = await this.session(key, header);
      result = await session.run(header.op, header.headers, payload);
    } catch (error) {
      // Not the app's own throw (the shim catches those): the module failed to load or evaluate
      // (syntax error, top-level throw, no code), or the isolate went away. Start over next time.
      void this.drop(key);
      result = { outcome: "threw", message: String(error?.message ?? error), stack: String(error?.stack ?? "") };
    }
    this.running.delete(header.invocation);
    const { body, ...rest } = result;
    this.send({ ...rest, t: "result", id }, body ?? "");
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
      mainModule: "brickyard-shim.js",
      modules: { "brickyard-shim.js": this.env.SHIM, "app.js": code.module },
      env: { CAPS: caps, VARS: code.vars ?? {} },
      // Every fetch() and connect() of the app goes through Egress, which knows what it declared.
      globalOutbound: this.ctx.exports.Egress({ props: { appId: code.appId, origins: code.origins ?? [] } }),
    };
  }

  async evict({ id, key }) {
    await this.drop(key);
    try {
      const worker = this.env.LOADER.get(key, () => {
        throw new Error("not loaded");
      });
      await worker.getEntrypoint("Shim").evict();
    } catch {
      // abortIsolate() ends the call with an error; a key not loaded throws from the callback.
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
  #kv;

  constructor(channel, appId, caps) {
    super();
    this.#channel = channel;
    this.#appId = appId;
    this.#kv = caps.includes("kv");
  }

  call(header, payload) {
    const call = { invocation: String(header.invocation), path: String(header.path), key: header.key, contentType: header.contentType };
    const channel = this.#channel;
    const appId = this.#appId;
    // A cached read answers only what Node would: a live op call of this app, which imports KV.
    if (call.path !== "/kv/get" || typeof call.key !== "string" || !this.#kv || channel.running.get(call.invocation) !== appId) {
      return channel.bind(appId, call, payload);
    }
    const hit = channel.cache.get(appId, call.key);
    if (hit !== undefined) return { status: 200, contentType: "application/json", body: hit };
    return channel.bind(appId, call, payload).then((reply) => {
      // Node sends an epoch only when the cache is on (a single instance owns the data).
      if (reply.status === 200 && typeof reply.epoch === "number") channel.cache.put(appId, call.key, reply.body, reply.epoch);
      return { status: reply.status, contentType: reply.contentType, body: reply.body };
    });
  }
}
