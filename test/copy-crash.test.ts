import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDialect } from "./helpers/dialects.ts";
import { serverProcess, type ServerProcess } from "./helpers/server-process.ts";

// Fills the app with 16 blobs of 1 MiB and 200 KV values; `count` reports what a copy holds.
const MODULE = `export const manifest = {
  id: "crash-source",
  capabilities: { imports: ["svc:storage/kv@1.0", "svc:storage/blob@1.0"] },
  routes: { fill: { access: "write" }, count: { access: "read" } },
};
export default {
  async fetch(request, env) {
    if (request.headers.get("x-svc-op") === "fill") {
      for (let i = 0; i < 16; i++) await env.BLOB.put("b" + i, new Uint8Array(1024 * 1024).fill(i), { contentType: "application/octet-stream" });
      for (let i = 0; i < 200; i++) await env.KV.set("k" + i, { i, pad: "x".repeat(100) });
      return Response.json({ ok: true, value: true });
    }
    const kv = await env.KV.list({ limit: 1000 });
    const blobs = await env.BLOB.list({ limit: 1000 });
    return Response.json({ ok: true, value: { kv: kv.keys.length, blobs: blobs.keys.length } });
  },
};
`;

/**
 * Issue 16: a copy with data is one transaction, so a server killed mid-copy (SIGKILL of the whole
 * process group: Node and its workerd children, as when the machine dies) leaves either no copy
 * or a complete one, never code without data. Kills land at several points of the copy.
 */
describeEachDialect("copy with data survives kill -9", (dialect) => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await serverProcess(dialect);
  });
  afterAll(async () => server.close());
  const api = (method: string, path: string, body?: unknown) => server.api(method, path, body);

  it("leaves no copy or a complete one, wherever the kill lands", { timeout: 240_000 }, async () => {
    await server.start();
    const created = (await (await api("POST", "/app", { module: MODULE })).json()) as { id: string };
    expect((await api("POST", `/app/${created.id}/api/fill`, {})).status).toBe(200);
    const whole = (await (await api("POST", `/app/${created.id}/api/count`, {})).json()) as { value: unknown };
    expect(whole.value).toEqual({ kv: 200, blobs: 16 });

    const outcomes: string[] = [];
    for (const [i, delayMs] of [0, 200, 2500].entries()) {
      const copying = api("POST", `/app/${created.id}/copy`, { manifest_id: `crash-copy-${i}`, include_data: true }).catch(() => null);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await server.killGroup();
      await copying;
      await server.start();
      const apps = ((await (await api("GET", "/app?limit=100")).json()) as { apps: { id: string; manifestId: string }[] }).apps;
      const copy = apps.find((a) => a.manifestId === `crash-copy-${i}`);
      if (copy === undefined) {
        outcomes.push("none");
        continue;
      }
      const counted = (await (await api("POST", `/app/${copy.id}/api/count`, {})).json()) as { value: unknown };
      expect(counted.value, `copy ${i} (kill after ${delayMs} ms)`).toEqual(whole.value);
      outcomes.push("complete");
    }
    // Each outcome is one of the two; which one depends on where the kill landed.
    expect(outcomes.every((o) => o === "none" || o === "complete")).toBe(true);
    console.warn(`copy-crash [${dialect}]: ${outcomes.join(", ")}`);
  });
});
