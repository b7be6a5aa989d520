import { createHash, randomBytes } from "node:crypto";

/**
 * An app for load through several instances: `ping` answers, `put` writes one KV value (also the
 * target of a webhook), `get` reads many, `tick` counts routine runs.
 */
export function loadModule(id: string): string {
  return `export const manifest = {
  id: ${JSON.stringify(id)},
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: {
    ping: { access: "read" },
    put: { access: "write", input: { type: "object", properties: { k: { type: "string" }, v: { type: "integer" } }, required: ["k", "v"] } },
    get: { access: "read", input: { type: "object", properties: { keys: { type: "array", items: { type: "string" } } }, required: ["keys"] } },
    tick: { access: "write" },
  },
};
export default {
  async fetch(request, env) {
    const body = await request.json();
    switch (request.headers.get("x-svc-op")) {
      case "ping":
        return Response.json({ ok: true, value: "pong" });
      case "put":
        await env.KV.set(body.k, body.v);
        return Response.json({ ok: true, value: null });
      case "get":
        return Response.json({ ok: true, value: await Promise.all(body.keys.map((k) => env.KV.get(k))) });
      case "tick":
        await env.KV.set("ticks", ((await env.KV.get("ticks")) ?? 0) + 1);
        return Response.json({ ok: true, value: null });
    }
    return Response.json({ ok: false, error: { message: "unknown op" } });
  },
};
`;
}

/** An app the load writes to, with a webhook on its `put` op. */
export interface LoadTarget {
  appId: string;
  hook: { id: string; secret: string };
}

/** A request that did not get the answer it should have. */
export interface LoadFailure {
  what: "op" | "kv" | "webhook" | "asset";
  status: number;
  body: string;
}

export interface LoadReport {
  requests: number;
  failures: LoadFailure[];
  /** KV values whose write was acknowledged (200), by op call or webhook delivery. */
  kv: Array<{ appId: string; key: string; value: number }>;
  /** Assets whose upload was acknowledged (201): where they are served and what they hold. */
  assets: Array<{ url: string; sha256: string }>;
}

export interface MixedLoad {
  /** Resolves once `count` more requests have been answered, successfully or not. */
  next(count: number): Promise<void>;
  stop(): Promise<LoadReport>;
}

/** Per second: far below every rate limit, even with one instance of three down. */
const RATES = { op: 20, kv: 20, webhook: 4, asset: 3 };

/**
 * A steady mix through `base` until stopped: op calls, KV writes, webhook deliveries and asset
 * uploads, each kind a paced sequential loop (its own client, as separate senders would be).
 * `tag` keeps keys of different runs apart.
 */
export function startMixedLoad(base: string, token: string, targets: LoadTarget[], tag: string): MixedLoad {
  const report: LoadReport = { requests: 0, failures: [], kv: [], assets: [] };
  const waiters: Array<{ at: number; resolve: () => void }> = [];
  let stopped = false;
  const answered = () => {
    report.requests++;
    for (const waiter of waiters.filter((w) => w.at <= report.requests)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  const send = async (what: LoadFailure["what"], path: string, init: RequestInit, expected: number): Promise<unknown> => {
    const res = await fetch(`${base}${path}`, init).catch((error: unknown) => ({ status: 0, text: () => Promise.resolve(String(error)) }));
    const text = await res.text();
    answered();
    if (res.status === expected) return JSON.parse(text) as unknown;
    report.failures.push({ what, status: res.status, body: text.slice(0, 300) });
    return undefined;
  };
  const json = (body: unknown, bearer: string): RequestInit => ({ method: "POST", headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const target = (n: number) => targets[n % targets.length] as LoadTarget;

  const kinds: Record<keyof typeof RATES, (n: number) => Promise<void>> = {
    op: async (n) => void (await send("op", `/app/${target(n).appId}/api/ping`, json({}, token), 200)),
    kv: async (n) => {
      const { appId } = target(n);
      const key = `${tag}-kv-${n}`;
      if ((await send("kv", `/app/${appId}/api/put`, json({ k: key, v: n }, token), 200)) !== undefined) report.kv.push({ appId, key, value: n });
    },
    webhook: async (n) => {
      const { appId, hook } = target(n);
      const key = `${tag}-hook-${n}`;
      if ((await send("webhook", `/api/v1/hooks/${hook.id}`, json({ k: key, v: n }, hook.secret), 200)) !== undefined) report.kv.push({ appId, key, value: n });
    },
    asset: async (n) => {
      const bytes = randomBytes(2048 + n);
      const form = new FormData();
      form.set("key", `${tag}/${n}.bin`);
      form.set("file", new Blob([bytes], { type: "application/octet-stream" }), "upload.bin");
      const made = await send("asset", `/app/${target(n).appId}/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${token}` } }, 201);
      if (made !== undefined) report.assets.push({ url: (made as { url: string }).url, sha256: createHash("sha256").update(bytes).digest("hex") });
    },
  };
  const loops = Object.entries(kinds).map(async ([kind, run]) => {
    const every = 1000 / RATES[kind as keyof typeof RATES];
    const start = Date.now();
    for (let n = 0; !stopped; n++) {
      await run(n);
      // Paced: request n starts no earlier than n periods after the first.
      const ahead = start + (n + 1) * every - Date.now();
      if (ahead > 0) await new Promise((resolve) => setTimeout(resolve, ahead));
    }
  });
  return {
    next: (count) => new Promise((resolve) => waiters.push({ at: report.requests + count, resolve })),
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return report;
    },
  };
}

/** What of an acknowledged load is not there now, read back through `base`: each a description. */
export async function missingAfter(base: string, token: string, report: LoadReport): Promise<string[]> {
  const missing: string[] = [];
  const byApp = new Map<string, LoadReport["kv"]>();
  for (const entry of report.kv) byApp.set(entry.appId, [...(byApp.get(entry.appId) ?? []), entry]);
  for (const [appId, entries] of byApp) {
    for (let i = 0; i < entries.length; i += 50) {
      const batch = entries.slice(i, i + 50);
      const res = await fetch(`${base}/app/${appId}/api/get`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ keys: batch.map((e) => e.key) }) });
      const values = ((await res.json()) as { value?: unknown[] }).value ?? [];
      batch.forEach((entry, j) => {
        if (values[j] !== entry.value) missing.push(`kv ${appId}/${entry.key}: ${JSON.stringify(values[j])} instead of ${entry.value}`);
      });
    }
  }
  for (const asset of report.assets) {
    const res = await fetch(asset.url);
    const sha256 = createHash("sha256").update(Buffer.from(await res.arrayBuffer())).digest("hex");
    if (res.status !== 200 || sha256 !== asset.sha256) missing.push(`asset ${asset.url}: ${res.status}`);
  }
  return missing;
}
