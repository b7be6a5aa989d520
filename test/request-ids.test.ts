import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import { LogCapture } from "./helpers/logs.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const THROWS = `export const manifest = { id: "thrower", routes: { boom: { access: "read" }, spin: { access: "read" } } };
export default { async fetch(request) {
  if (request.headers.get("x-svc-op") === "spin") for (;;) {}
  throw new Error("failed for request " + request.headers.get("x-svc-request"));
} };`;

/** Issue 47: one id ties a request to the op call, the events and the log lines it caused. */
describe("request ids", () => {
  let server: TestServer;
  let user: FixtureUser;
  let appId: string;
  const logs = new LogCapture();

  beforeAll(async () => {
    // Debug: every answered request has its line; faults are logged at warn.
    server = await startServer({ env: { LOG_LEVEL: "debug" }, logStream: logs, executorTuning: { pingTimeoutMs: 500 } });
    user = await makeUser(server);
    const created = await server.client.post("/app", { module: THROWS }, { token: user.token });
    expect(created.status).toBe(201);
    appId = created.body.id as string;
  });
  afterAll(async () => server.close());

  it("an op that throws: its response, the app's request, its activity event and its log lines carry the id the client sent", async () => {
    const id = "trace-4f1c-boom";
    const res = await server.client.post(`/app/${appId}/api/boom`, {}, { token: user.token, headers: { "x-request-id": id } });
    expect(res.status).toBe(500);
    expect(res.headers.get("x-request-id")).toBe(id);
    expect(res.body.error.message).toBe(`Error: failed for request ${id}`);
    const activity = await server.client.get(`/app/${appId}/activity`, { token: user.token });
    const event = (activity.body.value.items as { kind: string; data: Record<string, unknown> }[]).find((e) => e.kind === "api_proxy_result");
    expect(event?.data.requestId).toBe(id);
    const line = await logs.find((l) => l.reqId === id && l.msg === "request answered");
    expect(line).toMatchObject({ reqId: id, statusCode: 500 });
  });

  it("an executor fault names the requests it failed, one line each under their ids", async () => {
    const id = "trace-spin-9";
    const res = await server.client.post(`/app/${appId}/api/spin`, {}, { token: user.token, headers: { "x-request-id": id } });
    expect(res.status).toBe(503);
    expect(res.headers.get("x-request-id")).toBe(id);
    const line = await logs.find((l) => l.reqId === id && l.msg === "executor fault failed this request's op call");
    expect(line.executor).toMatchObject({ type: "fault" });
    const fault = await logs.find((l) => (l.executor as { type?: string; requests?: string[] } | undefined)?.requests?.includes(id) === true);
    expect(fault.msg).toBe("executor fault");
  });

  it("an id that is not a printable token of at most 128 characters is replaced by one of ours", async () => {
    for (const sent of ["has space", "x".repeat(129), "tab\there"]) {
      const res = await server.client.get("/healthz", { headers: { "x-request-id": sent } });
      const got = res.headers.get("x-request-id");
      expect(got).not.toBe(sent);
      expect(got).toMatch(/^[0-9a-f-]{36}$/);
    }
    const res = await server.client.get("/healthz");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});
