// Runs INSIDE workerd. Loads each (app, revision, secrets version) into its own isolate through
// the Worker Loader and forwards the op request to it. Kept small: policy lives in Node.

export { Egress } from "./egress.js";

const CONTROL = "/__brickyard/";

export default {
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (pathname === CONTROL + "ping") return new Response("ok");
    const key = request.headers.get("x-by-key");
    if (!key) return new Response("missing x-by-key", { status: 400 });
    if (pathname === CONTROL + "evict") return evict(env, key);
    return run(request, env, ctx, key);
  },
};

async function run(request, env, ctx, key) {
  const invocation = request.headers.get("x-svc-invocation") ?? "";
  const caps = (request.headers.get("x-by-caps") ?? "").split(",").filter(Boolean);
  // The body may start with the code bundle (first call in this process), then the op input.
  const text = await request.text();
  const codeLength = Number(request.headers.get("x-by-code-length") ?? 0);
  const pushed = codeLength > 0 ? JSON.parse(text.slice(0, codeLength)) : null;
  const body = text.slice(codeLength);
  const worker = env.LOADER.get(key, async () => workerCode(env, ctx, caps, pushed ?? (await fetchCode(env, invocation))));
  const headers = new Headers({ "content-type": "application/json" });
  for (const [name, value] of request.headers) if (name.startsWith("x-svc-")) headers.set(name, value);
  const op = request.headers.get("x-svc-op") ?? "";
  // Buffered, not streamed: op bodies are small JSON, and a stream across isolates costs more.
  const appRequest = new Request(`https://app.invalid/api/${encodeURIComponent(op)}`, { method: "POST", headers, body });
  try {
    return await worker.getEntrypoint().fetch(appRequest);
  } catch (error) {
    // The module failed to load or evaluate (syntax error, top-level throw, no code).
    return Response.json({ message: String(error?.message ?? error), stack: String(error?.stack ?? "") }, { status: 500, headers: { "x-by-outcome": "threw" } });
  }
}

async function fetchCode(env, invocation) {
  // The code endpoint answers for the invocation's own (app, revision) and nothing else.
  const res = await env.INTERNAL.fetch("http://internal/code", { headers: { "x-svc-invocation": invocation } });
  if (!res.ok) throw new Error(`code unavailable (${res.status})`);
  return res.json();
}

function workerCode(env, ctx, caps, code) {
  return {
    compatibilityDate: env.COMPATIBILITY_DATE,
    mainModule: "brickyard-shim.js",
    modules: { "brickyard-shim.js": env.SHIM, "app.js": code.module },
    env: { INTERNAL: env.INTERNAL, CAPS: caps, VARS: code.vars ?? {} },
    // Every fetch() and connect() of the app goes through Egress, which knows what it declared.
    globalOutbound: ctx.exports.Egress({ props: { appId: code.appId, origins: code.origins ?? [] } }),
  };
}

async function evict(env, key) {
  const worker = env.LOADER.get(key, () => {
    throw new Error("not loaded");
  });
  try {
    await worker.getEntrypoint().fetch("http://evict" + CONTROL + "evict");
  } catch {
    // abortIsolate() ends the request with an error; a key not loaded throws from the callback.
  }
  return new Response("evicted");
}
