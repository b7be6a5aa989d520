import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./helpers/apps.ts";
import { scrape as scrapeAt, value } from "./helpers/metrics.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const TOKEN = "metrics-secret-for-the-test";

const scrape = (server: TestServer) => scrapeAt(server.url, TOKEN);

const OPS = `export const manifest = { id: "counted", routes: { ok: { access: "read" }, boom: { access: "read" } } };
export default { async fetch(request) {
  if (request.headers.get("x-svc-op") === "boom") throw new Error("boom");
  return Response.json({ ok: true, value: 1 });
} };`;

/** Issue 47: `GET /metrics` in Prometheus text format, guarded by METRICS_TOKEN. */
describe("metrics", () => {
  let server: TestServer;
  let bare: TestServer;
  let registry: NpmRegistry;

  beforeAll(async () => {
    registry = await startNpmRegistry();
    server = await startServer({ env: { METRICS_TOKEN: TOKEN, NPM_REGISTRY_URL: registry.url, BUILD_RETRY_MS: "20" } });
    bare = await startServer();
  });
  afterAll(async () => {
    await bare.close();
    await server.close();
    await registry.close();
  });

  it("is not there without METRICS_TOKEN (404), and refuses a missing or wrong token (401)", async () => {
    expectError(await bare.client.get("/metrics", { token: TOKEN }), 404, "not_found");
    expectError(await server.client.get("/metrics"), 401, "unauthorized");
    expectError(await server.client.get("/metrics", { token: "not-the-token" }), 401, "unauthorized");
    expect((await server.client.get("/metrics", { token: TOKEN })).status).toBe(200);
  });

  it("has the request, op-call, executor and build series, and each moves by exactly the traffic sent", async () => {
    const created = await server.client.post("/app", { module: OPS });
    expect(created.status).toBe(201);
    const app = { id: created.body.id as string, token: created.body.token as string };
    const before = await scrape(server);
    for (const name of [
      "brickyard_http_requests_total",
      "brickyard_http_request_duration_seconds",
      "brickyard_op_calls_total",
      "brickyard_executor_processes",
      "brickyard_executor_isolates",
      "brickyard_executor_restarts_total",
      "brickyard_executor_quarantines_total",
      "brickyard_builds",
      "brickyard_scheduler_lag_seconds",
      "brickyard_event_loop_delay_seconds",
      "brickyard_event_streams_open",
      "process_cpu_user_seconds_total",
    ]) {
      expect(before.has(name), name).toBe(true);
    }
    // One instance's processes: EXECUTORS=1 for claimed apps, one free, one of each for first calls.
    expect(value(before, "brickyard_executor_processes", { lane: "claimed" })).toBe(1);
    expect(value(before, "brickyard_executor_processes", { lane: "new-free" })).toBe(1);

    const N = 5;
    for (let i = 0; i < N - 1; i++) expect((await server.client.post(`/app/${app.id}/api/ok`, {}, { token: app.token })).status).toBe(200);
    expectError(await server.client.post(`/app/${app.id}/api/boom`, {}, { token: app.token }), 500, "operation_failed");
    // One build: a module importing an npm package, published by the build runner.
    const build = await server.client.post("/app", {
      module: `import { greet } from "npm:greet@^1.0.0";\nexport const manifest = { id: "built", routes: { run: {} } };\nexport default { async fetch() { return Response.json({ ok: true, value: greet("x") }); } };`,
    });
    expect(build.status, JSON.stringify(build.body)).toBe(202);
    let state = build.body.state as string;
    for (let i = 0; i < 60 && !["published", "failed"].includes(state); i++) {
      state = (await server.client.get(new URL(build.body.statusUrl as string).pathname, { token: build.body.token as string, headers: { prefer: "wait=5" } })).body.state as string;
    }
    expect(state).toBe("published");
    // And one executor fault: the free lane's process killed.
    const { pool } = server.ctx.executor;
    const logged = pool.onEvent;
    const faulted = new Promise<void>((resolve) => {
      pool.onEvent = (event) => {
        logged(event);
        // The kill's own fault: on a loaded host the watchdog may report another first.
        if (event.type === "fault" && event.reason === "crashed") resolve();
      };
    });
    const proc = pool.processOf(app.id, "free");
    expect(proc).not.toBeNull();
    proc?.kill();
    await faulted;
    pool.onEvent = logged;

    const after = await scrape(server);
    const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
    expect(delta("brickyard_http_requests_total", { family: "app/api", method: "POST", status: "200" })).toBe(N - 1);
    expect(delta("brickyard_http_requests_total", { family: "app/api", method: "POST", status: "500" })).toBe(1);
    // (This parser folds a labelled histogram's samples into one set of buckets: the counter above
    // is what counts requests exactly; the histogram's buckets are there.)
    expect(after.get("brickyard_http_request_duration_seconds")?.metrics[0]?.buckets?.["+Inf"]).toBeDefined();
    expect(delta("brickyard_op_calls_total", { outcome: "ok" })).toBe(N - 1);
    expect(delta("brickyard_op_calls_total", { outcome: "operation_failed" })).toBe(1);
    expect(delta("brickyard_builds", { state: "published" })).toBe(1);
    expect(delta("brickyard_executor_restarts_total", { reason: "crashed" })).toBe(1);
    expect(delta("brickyard_executor_quarantines_total")).toBe(0);
  }, 60_000);
});
