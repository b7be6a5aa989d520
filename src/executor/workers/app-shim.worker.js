// Runs INSIDE workerd, in each app's isolate, as its main module. Builds the app's env from
// the capabilities it imported, bound to this call's invocation id, and reports a throw.
import app from "./app.js";
import { abortIsolate } from "cloudflare:workers";

export default {
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__brickyard/evict") abortIsolate("idle isolate evicted");
    const appEnv = makeEnv(env, request.headers.get("x-svc-invocation") ?? "");
    try {
      if (typeof app?.fetch !== "function") throw new TypeError("the module's default export has no fetch function");
      const res = await app.fetch(request, appEnv, ctx);
      if (!(res instanceof Response)) throw new TypeError("default.fetch must return a Response");
      // Buffered: results are small JSON envelopes, and a stream across isolates costs more.
      const headers = new Headers(res.headers);
      headers.set("x-by-outcome", "response");
      return new Response(await res.text(), { status: res.status, headers });
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return Response.json({ message, stack: String(error?.stack ?? "") }, { status: 500, headers: { "x-by-outcome": "threw" } });
    }
  },
};

function makeEnv(env, invocation) {
  async function call(path, body, headers = {}) {
    const res = await env.INTERNAL.fetch("http://internal" + path, {
      method: "POST",
      headers: { "x-svc-invocation": invocation, ...headers },
      body,
    });
    if (res.ok) return res;
    const failure = await res.json().catch(() => null);
    const error = new Error(failure?.error?.message ?? `capability call failed (${res.status})`);
    error.name = "CapabilityError";
    error.kind = failure?.error?.kind ?? "capability_error";
    throw error;
  }
  const json = async (path, payload) => (await call(path, JSON.stringify(payload))).json();
  const out = { ...env.VARS };
  if (env.CAPS.includes("kv")) {
    out.KV = Object.freeze({
      async get(key) {
        const res = await call("/kv/get", JSON.stringify({ key }));
        const text = await res.text();
        return text === "" ? null : JSON.parse(text);
      },
      async set(key, value) {
        const text = JSON.stringify(value);
        if (text === undefined) throw new TypeError("KV values must be JSON-serializable");
        await call("/kv/set", text, { "x-by-key": encodeURIComponent(String(key)) });
      },
      delete: (key) => json("/kv/delete", { key }).then((r) => r.deleted),
      list: (options = {}) => json("/kv/list", options),
    });
  }
  if (env.CAPS.includes("blob")) {
    out.BLOB = Object.freeze({
      async put(key, data, options = {}) {
        const headers = { "x-by-key": encodeURIComponent(String(key)), "content-type": options.contentType ?? "application/octet-stream" };
        await call("/blob/put", data, headers);
      },
      async get(key) {
        const res = await call("/blob/get", JSON.stringify({ key }));
        if (res.status === 204) return null;
        const data = await res.arrayBuffer();
        return { data, contentType: res.headers.get("content-type") ?? "application/octet-stream", size: data.byteLength };
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
