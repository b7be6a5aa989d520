// Runs INSIDE workerd, in each app's isolate, as its main module. The supervisor opens one
// session per isolate and runs every op call through it: the session builds the app's env from
// the capabilities it imported, bound to that call's invocation id, and reports a throw.
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

  async run(op, headers, body, invalidations) {
    // Writes committed elsewhere before this call began: this op must not read around them.
    const cache = this.#cache;
    if (invalidations.clear !== null) cache.clear(invalidations.clear);
    for (const [key, epoch] of invalidations.keys) cache.invalidate("", key, epoch);
    const request = new Request(`https://app.invalid/api/${encodeURIComponent(op)}`, { method: "POST", headers, body });
    const live = { done: false };
    const appEnv = makeEnv(this.#env, this.#bindings, headers["x-svc-invocation"] ?? "", cache, live);
    try {
      if (typeof app?.fetch !== "function") throw new TypeError("the module's default export has no fetch function");
      const res = await app.fetch(request, appEnv, this.#ctx);
      if (!(res instanceof Response)) throw new TypeError("default.fetch must return a Response");
      return { outcome: "response", status: res.status, contentType: res.headers.get("content-type") ?? "", body: await res.text() };
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return { outcome: "threw", message, stack: String(error?.stack ?? "") };
    } finally {
      // Node refuses a finished invocation's binding calls; cached reads must refuse them too.
      live.done = true;
    }
  }
}

function makeEnv(env, bindings, invocation, cache, live) {
  async function call(path, payload, extra = {}) {
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
  }
  const text = (res) => decoder.decode(res.body);
  // This isolate's own write: a read that started before it must not be cached after it.
  const written = (key, res) => {
    if (typeof res.epoch === "number") cache.invalidate("", String(key), res.epoch);
  };
  const json = async (path, payload) => JSON.parse(text(await call(path, JSON.stringify(payload))));
  const out = { ...env.VARS };
  if (env.CAPS.includes("kv")) {
    out.KV = Object.freeze({
      async get(key) {
        let bytes = typeof key === "string" && !live.done ? cache.get("", key) : undefined;
        if (bytes === undefined) {
          const res = await call("/kv/get", "", { key });
          // Node sends an epoch only when the cache is on (this instance is the only writer).
          if (typeof res.epoch === "number") cache.put("", key, res.body, res.epoch);
          bytes = res.body;
        }
        const body = decoder.decode(bytes);
        return body === "" ? null : JSON.parse(body);
      },
      async set(key, value) {
        const body = JSON.stringify(value);
        if (body === undefined) throw new TypeError("KV values must be JSON-serializable");
        written(key, await call("/kv/set", body, { key: String(key) }));
      },
      async delete(key) {
        const res = await call("/kv/delete", JSON.stringify({ key }));
        written(key, res);
        return JSON.parse(text(res)).deleted;
      },
      list: (options = {}) => json("/kv/list", options),
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
