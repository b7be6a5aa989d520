import { expect } from "vitest";
import type { TestServer } from "./server.ts";

/**
 * An app for routine and webhook suites: `tick` counts its runs in KV, `flaky` fails while the
 * KV flag `fail` is set, `needs` has a required input field, `ingest`/`read` store and return
 * delivered payloads, `whoami` reports the headers the app saw, `slow` answers after `ms` (default 400).
 */
export function automationModule(id: string): string {
  return `export const manifest = {
  id: ${JSON.stringify(id)},
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: {
    tick: { title: "Count a tick", access: "write" },
    flaky: { description: "Fails while the fail flag is set", access: "write" },
    setFail: { access: "write", input: { type: "object", properties: { fail: { type: "boolean" } } } },
    needs: { access: "write", input: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
    optional: { access: "write", input: { type: "object", properties: { n: { type: "integer" } }, additionalProperties: false } },
    count: { access: "read", output: { type: "object", properties: { ticks: { type: "integer" } }, required: ["ticks"] } },
    whoami: { access: "read" },
    ingest: { title: "Store an event", access: "write", input: { type: "object", minProperties: 1 }, output: { type: "object", required: ["key"] } },
    slow: { access: "read" },
    read: { access: "read", input: { type: "object", properties: { key: { type: "string" } }, required: ["key"] } },
  },
};

export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    const body = await request.json();
    const ticks = (await env.KV.get("ticks")) ?? 0;
    switch (op) {
      case "tick":
      case "optional":
        await env.KV.set("ticks", ticks + 1);
        return Response.json({ ok: true, value: { ticks: ticks + 1 } });
      case "flaky":
        if (await env.KV.get("fail")) return Response.json({ ok: false, error: { message: "flaky is failing on purpose" } });
        return Response.json({ ok: true, value: "fine" });
      case "setFail":
        await env.KV.set("fail", body.fail === true);
        return Response.json({ ok: true, value: null });
      case "count":
        return Response.json({ ok: true, value: { ticks } });
      case "whoami":
        return Response.json({ ok: true, value: {
          trigger: request.headers.get("x-svc-trigger"),
          webhook: request.headers.get("x-svc-webhook"),
          role: request.headers.get("x-svc-role"),
          user: request.headers.get("x-svc-user"),
          body,
        } });
      case "ingest": {
        // Stripe events carry an id; GitHub pushes are named by repository and commit range.
        const key = body.object === "event" ? "stripe:" + body.id : "github:" + body.repository.full_name + ":" + body.before;
        await env.KV.set(key, body);
        return Response.json({ ok: true, value: { key } });
      }
      case "slow":
        await new Promise((resolve) => setTimeout(resolve, body.ms ?? 400));
        return Response.json({ ok: true, value: body });
      case "read":
        return Response.json({ ok: true, value: (await env.KV.get(body.key)) ?? null });
      default:
        return Response.json({ ok: false, error: { message: "no such op" } });
    }
  },
};
`;
}

/** Creates an app owned by the holder of `token` (an authenticated create); returns its id. */
export async function createOwnedApp(server: TestServer, token: string, manifestId: string): Promise<string> {
  const res = await server.client.post("/app", { module: automationModule(manifestId) }, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

/** Calls an op of the app as its owner and returns the value. */
export async function callAsOwner(server: TestServer, token: string, appId: string, op: string, input: unknown = {}): Promise<unknown> {
  const res = await server.client.post(`/app/${appId}/api/${op}`, input, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.value;
}
