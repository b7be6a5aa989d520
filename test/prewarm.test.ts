import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { queryRecorder } from "./helpers/query-plans.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const moduleOf = (revision: number, id = "warmed") => `export const manifest = { id: "${id}", routes: { which: {} } };
export default { async fetch() { return Response.json({ ok: true, value: ${revision} }); } };`;

// The executor sends an isolate's code with its first run on a process, read from the revision's
// row: a call that reads no source found its isolate built already.
const readsSource = (sql: string) => /from "app_versions"/.test(sql);

describeEachDialect("a new revision's isolate is built when it is published", (dialect) => {
  let server: TestServer;
  let token: string;
  const recorder = queryRecorder();
  beforeAll(async () => {
    server = await startServer({ dialect, queryLog: recorder.log });
    token = (await createUser(server)).token;
  });
  afterAll(async () => server.close());

  /** Calls the app; the revision that answered and whether the call read its source. */
  const call = async (id: string) => {
    let value: unknown;
    const queries = await recorder.record(async () => {
      const res = await server.client.post(`/app/${id}/api/which`, {}, { token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      value = res.body.value;
    });
    return { revision: value, readSource: queries.some((q) => readsSource(q.sql)) };
  };

  it("builds it before the first call for an app that ran lately, so that call finds it loaded", async () => {
    const created = await server.client.post("/app", { module: moduleOf(1) }, { token });
    const id = created.body.id as string;
    expect(await call(id)).toEqual({ revision: 1, readSource: true });

    expect((await server.client.put(`/app/${id}`, { module: moduleOf(2) }, { token })).status).toBe(200);
    await server.ctx.runner.warmed(id);
    expect(await call(id)).toEqual({ revision: 2, readSource: false });
  });

  it("leaves an app that has not run alone: its first call builds it", async () => {
    const created = await server.client.post("/app", { module: moduleOf(1, "cold") }, { token });
    const id = created.body.id as string;
    expect((await server.client.put(`/app/${id}`, { module: moduleOf(2, "cold") }, { token })).status).toBe(200);
    await server.ctx.runner.warmed(id);
    expect(await call(id)).toEqual({ revision: 2, readSource: true });
  });
});
