import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { burst, callOp, startSceneServer, type StartedSceneServer } from "./scene.ts";

const KEYS = 4000;

// An honest app whose read op walks all of its 4,000 keys one `get` at a time: more than its
// isolate's read cache holds, so every get is a binding call. Eight such calls at once keep a
// process busy for seconds with no call finishing, which is what the CPU budget used to read as a
// runaway.
const LEDGER = `export const manifest = {
  id: "ledger",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { fill: { access: "write", input: { type: "object" } }, scan: { access: "read", input: { type: "object" } } },
};
export default {
  async fetch(request, env) {
    if (request.headers.get("x-svc-op") === "fill") {
      const { from } = await request.json();
      for (let i = from; i < from + 1000; i++) await env.KV.set("k" + i, { n: i, note: "entry " + i });
      return Response.json({ ok: true, value: from });
    }
    let sum = 0;
    for (let i = 0; i < ${KEYS}; i++) sum += (await env.KV.get("k" + i)).n;
    return Response.json({ ok: true, value: sum });
  },
};
`;

/** Issue 42: progress, not busyness, decides a runaway. */
describe("hostile: an honest app that loops over its data under load", () => {
  let server: StartedSceneServer;
  let app: { id: string; token: string };

  beforeAll(async () => {
    server = await startSceneServer({});
    const created = await server.client.post("/app", { module: LEDGER }, { token: server.owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    app = { id: created.body.id as string, token: server.owner.token };
    for (let from = 0; from < KEYS; from += 1000) expect((await callOp(server, app.id, "fill", app.token, { from })).body).toEqual({ ok: true, value: from });
  });
  afterAll(async () => server.close());

  it("4,000 KV reads a call, 8 calls at once (the free plan's ceiling) for 30 s: every call answers, no process is killed, nothing is quarantined", async () => {
    const expected = (KEYS * (KEYS - 1)) / 2;
    const answers: { status: number; kind: string | null }[] = [];
    const end = Date.now() + 30_000;
    let rounds = 0;
    while (Date.now() < end) {
      answers.push(...(await burst(server, app, "scan", {}, 8)));
      rounds += 1;
    }
    console.warn(`hostile | honest heavy op: ${answers.length} calls of ${KEYS} KV reads in ${rounds} rounds of 8`);
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(rounds).toBeGreaterThan(1);
    expect((await callOp(server, app.id, "scan", app.token)).body).toEqual({ ok: true, value: expected });
    const faults = server.logs.lines().filter((line) => (line.executor as { type?: string } | undefined)?.type === "fault");
    expect(faults).toEqual([]);
  }, 120_000);
});
