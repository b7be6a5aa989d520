import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "./helpers/accounts.ts";
import { manifestOf, moduleSource } from "./helpers/apps.ts";
import { LogCapture } from "./helpers/logs.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

// An agent edits an app it has been calling, and comes back later. The edit's code was built
// before its write committed and taken over by the new revision (Executor.stage, `adopt`); ten
// idle minutes later that isolate is evicted. The eviction used to ask workerd's loader for the
// revision's own key, which it had never built: the loader kept that as a failed build, and
// every later call of the revision on that process failed until the process went.
const versioned = (v: number) => moduleSource(manifestOf("edited"), `export const version = ${v};`).replace("value: { op }", `value: { op, v: ${v} }`);

describe("an edited app called again after its isolate idled out", () => {
  let server: TestServer;
  const logs = new LogCapture();
  beforeAll(async () => {
    // Ten idle minutes made 300 ms: the executor's timers run on real time.
    server = await startServer({ logStream: logs, env: { LOG_LEVEL: "debug" }, executorTuning: { isolateIdleMs: 300, pingIntervalMs: 50 } });
  });
  afterAll(async () => server.close());

  /** The next eviction logged of the app's isolate for `revision` (any secrets version). */
  const idledOut = (appId: string, revision: number) => logs.next((line) => String((line.executor as { key?: string } | undefined)?.key ?? "").startsWith(`${appId}:${revision}:`));

  it("answers from the edited revision", async () => {
    const created = await server.client.post("/app", { module: versioned(1) });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id, token } = created.body as { id: string; token: string };
    const call = () => server.client.post(`/app/${id}/api/hello`, {}, { token });
    expect((await call()).body.value).toEqual({ op: "hello", v: 1 });

    // The app ran lately, so the write stages its build and the revision takes it over.
    const put = await server.client.put(`/app/${id}`, { module: versioned(2) }, { token });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await call()).body.value).toEqual({ op: "hello", v: 2 });

    await idledOut(id, put.body.revision as number);

    const again = await call();
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.value).toEqual({ op: "hello", v: 2 });
  });

  it("answers from the newest revision after rapid edits and after a restore, each time its isolate idled out", async () => {
    const owner = await createUser(server);
    const source = (v: number) => `export const manifest = { id: "edited-often", routes: { which: {} } };
export default { async fetch(request, env) { return Response.json({ ok: true, value: { v: ${v}, secret: env.API_KEY ?? null } }); } };`;
    const created = await server.client.post("/app", { module: source(1) }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const call = async () => {
      const res = await server.client.post(`/app/${id}/api/which`, {}, { token: owner.token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.value as unknown;
    };
    // A secret first: the isolates below are built with its version in their keys.
    expect((await server.client.post(`/app/${id}/secrets`, { name: "API_KEY", value: "kept" }, { token: owner.token })).status).toBe(201);
    expect(await call()).toEqual({ v: 1, secret: "kept" });

    // Three writes in a row, each staging a build; the last is the one taken over and called.
    let revision = 1;
    for (const v of [2, 3, 4]) {
      const put = await server.client.put(`/app/${id}`, { module: source(v) }, { token: owner.token });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      revision = put.body.revision as number;
    }
    expect(await call()).toEqual({ v: 4, secret: "kept" });
    await idledOut(id, revision);
    expect(await call()).toEqual({ v: 4, secret: "kept" });

    // A restore publishes revision 2's source as a new revision.
    const restored = await server.client.post(`/app/${id}/versions/2/restore`, { expected_revision: revision }, { token: owner.token });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(await call()).toEqual({ v: 2, secret: "kept" });
    await idledOut(id, restored.body.revision as number);
    expect(await call()).toEqual({ v: 2, secret: "kept" });
  });
});
