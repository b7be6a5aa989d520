import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { encode } from "../src/domain/events/pg-transport.ts";
import { NOTIFY_PAYLOAD_MAX } from "../src/store/notify.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const KV_APP = `export const manifest = {
  id: "shared-live",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { put: { access: "write", input: { type: "object" } } },
};
export default {
  async fetch(request, env) {
    await env.KV.set("k", 1);
    return Response.json({ ok: true, value: null });
  },
};
`;

describe("live events on one instance", () => {
  it("splits a data event too large for one NOTIFY by keys", () => {
    const keys = Array.from({ length: 40 }, (_, i) => `${String(i).padStart(2, "0")}${"k".repeat(500)}`);
    const payloads = encode("app-1", { type: "data", keys });
    expect(payloads.length).toBeGreaterThan(1);
    for (const payload of payloads) expect(payload.length).toBeLessThanOrEqual(NOTIFY_PAYLOAD_MAX);
    expect(payloads.flatMap((p) => (JSON.parse(p) as { e: { keys: string[] } }).e.keys)).toEqual(keys);
    expect(encode("app-1", { type: "revision", revision: 3 })).toEqual(['{"a":"app-1","e":{"type":"revision","revision":3}}']);
  });
});

const pg = inject("pgAdminUrl") !== null;

describe.skipIf(!pg)("live events across two instances sharing PostgreSQL (LISTEN/NOTIFY)", () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startServer({ dialect: "postgres" });
    if (a.config.databaseUrl === null) throw new Error("expected a PostgreSQL server");
    b = await startServer({ env: { DATABASE_URL: a.config.databaseUrl } });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it("a stream on instance B sees KV writes and publishes made on instance A", { timeout: 20_000 }, async () => {
    const created = (await a.client.post("/app", { module: KV_APP })).body;
    const render = await openFrame(a, created.id, await openShell(a, `/app/${created.id}`));
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 10_000);
    try {
      const res = await fetch(`${b.url}/app/${created.id}/events?t=${render}`, { signal: abort.signal });
      expect(res.status).toBe(200);
      const reader = res.body?.getReader();
      if (reader === undefined) throw new Error("no body");
      let text = "";
      const until = async (needle: string) => {
        while (!text.includes(needle)) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`stream ended before ${needle}`);
          text += new TextDecoder().decode(value);
        }
      };
      await until("event: hello");
      expect((await a.client.post(`/app/${created.id}/api/put`, {}, { token: render })).status).toBe(200);
      await until('event: data\ndata: {"keys":["k"]}');
      expect((await a.client.put(`/app/${created.id}`, { module: KV_APP }, { token: created.token })).status).toBe(200);
      await until('event: revision\ndata: {"revision":2}');
      await reader.cancel();
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  });
});
