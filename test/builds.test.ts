import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, manifestOf } from "./helpers/apps.ts";
import type { ApiResponse } from "./helpers/client.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/** A module that imports `imports` (lines of import statements) and answers `op` with `expr`. */
function npmModule(id: string, imports: string, expr: string): string {
  return `${imports}
export const manifest = ${JSON.stringify(manifestOf(id, ["run"]))};
export default {
  async fetch(request) {
    return Response.json({ ok: true, value: ${expr} });
  },
};
`;
}

const GREET = npmModule("greeter", `import { greet } from "npm:greet@^1.0.0";`, `greet("ada")`);

const TERMINAL = ["published", "failed", "superseded", "canceled", "expired"];

/** Polls the status URL (long-polling with Prefer: wait) until a terminal state. */
async function settle(server: TestServer, status: ApiResponse["body"], token: string): Promise<ApiResponse["body"]> {
  let body = status;
  for (let i = 0; i < 60 && !TERMINAL.includes(body.state); i++) {
    const res = await server.client.get(new URL(body.statusUrl).pathname, { token, headers: { prefer: "wait=5" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    body = res.body;
  }
  return body;
}

describeEachDialect("builds: npm imports bundled by durable jobs", (dialect) => {
  let server: TestServer;
  let registry: NpmRegistry;
  beforeAll(async () => {
    registry = await startNpmRegistry();
    server = await startServer({ dialect, env: { NPM_REGISTRY_URL: registry.url, NPM_TOKEN: "registry-secret", BUILD_RETRY_MS: "20" } });
  });
  afterAll(async () => {
    await server.close();
    await registry.close();
  });

  it("an anonymous create with npm imports answers 202 with the build status and the token, then publishes and runs the package", async () => {
    const res = await server.client.post("/app", { module: GREET });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const status = res.body;
    expect(status).toMatchObject({ ok: true, intent: "create", lockState: "unresolved", attempts: expect.any(Number) });
    expect(["queued", "resolving", "building", "validating", "published"]).toContain(status.state);
    for (const field of ["buildId", "sourceEtag", "statusUrl", "acceptedAt", "updatedAt", "queueDeadline", "deadline", "inspectionExpiresAt", "appId", "token"]) {
      expect(status[field], field).toEqual(expect.any(String));
    }
    expect(status.statusUrl).toBe(`${server.config.baseUrl}/api/v1/builds/${status.buildId}`);
    expect(res.headers.get("location")).toBe(status.statusUrl);
    expect(status.idempotencyExpiresAt).toBeNull();
    // No runnable app until the build publishes.
    if (status.state !== "published") expectError(await server.client.post(`/app/${status.appId}/api/run`, {}, { token: status.token }), 404, "app_not_found");

    const done = await settle(server, status, status.token);
    expect(done).toMatchObject({
      state: "published",
      revision: 1,
      lockState: "locked",
      resolvedDependencies: { server: { greet: "1.2.0" }, client: {} },
      url: `${server.config.baseUrl}/app/${status.appId}`,
    });
    expect(done.lockDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(done.finishedAt).toEqual(expect.any(String));
    expect(done.token).toBeUndefined();
    const ran = await server.client.post(`/app/${status.appId}/api/run`, {}, { token: status.token });
    expect(ran.body, JSON.stringify(ran.body)).toEqual({ ok: true, value: "hello, ada (greet 1.2.0)" });
    // The registry token went to the registry, which is its origin.
    expect(registry.requests.some((r) => r.authorization === "Bearer registry-secret")).toBe(true);
  });

  it("the same source again publishes at once from the cached bundle (201), without asking the registry", async () => {
    const before = registry.requests.length;
    const res = await server.client.post("/app", { module: GREET });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(registry.requests.length).toBe(before);
    const ran = await server.client.post(`/app/${res.body.id}/api/run`, {}, { token: res.body.token });
    expect(ran.body).toEqual({ ok: true, value: "hello, ada (greet 1.2.0)" });
  });

  it("CommonJS packages, a built-in required by its bare name, two versions of one package in the tree, and a subpath", async () => {
    const user = await makeUser(server);
    const module = npmModule(
      "mixed",
      `import relay from "npm:cjs-events@1";
import { shout } from "npm:shout@1.0.0";
import { loud } from "npm:greet@1.0.0/loud";
import { greet } from "npm:greet@1.0.0";`,
      `[relay("hi"), shout("bo"), loud("x"), greet("y")]`,
    );
    const res = await server.client.post("/app", { module }, { token: user.token });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.token).toBeUndefined();
    const done = await settle(server, res.body, user.token);
    expect(done, JSON.stringify(done)).toMatchObject({ state: "published", resolvedDependencies: { server: { "cjs-events": "1.0.0", shout: "1.0.0", greet: "1.0.0" } } });
    const ran = await server.client.post(`/app/${done.appId}/api/run`, {}, { token: user.token });
    expect(ran.body, JSON.stringify(ran.body)).toEqual({ ok: true, value: ["aGk=", "HI BO (GREET 2.0.0)!", "HELLO, X", "hello, y (greet 1.0.0)"] });
  });

  it("imports no build can serve are refused at the write with the specifier and line", async () => {
    const bare = await server.client.post("/app", { module: npmModule("bare", `\nimport x from "lodash";`, "1") });
    expect(expectError(bare, 400, "app_build_unsupported").details).toEqual({ specifier: "lodash", line: 2, column: 14 });
    const url = await server.client.post("/app", { module: npmModule("url", `import x from "https://esm.sh/lodash";`, "1") });
    expect(expectError(url, 400, "app_build_unsupported").details).toMatchObject({ specifier: "https://esm.sh/lodash", line: 1 });
    const node = await server.client.post("/app", { module: npmModule("node", `import fs from "node:fs";`, "1") });
    expect(expectError(node, 400, "app_build_unsupported").details).toMatchObject({ specifier: "node:fs", line: 1 });
    const range = await server.client.post("/app", { module: npmModule("range", `import x from "npm:greet@not-a-range!";`, "1") });
    expectError(range, 400, "app_build_unsupported");
  });

  it("a range no version satisfies fails the build with 422's kind, naming the specifier and line", async () => {
    const res = await server.client.post("/app", { module: npmModule("nover", `import { greet } from "npm:greet@^9";`, "greet('x')") });
    expect(res.status).toBe(202);
    const done = await settle(server, res.body, res.body.token);
    expect(done.state).toBe("failed");
    expect(done.error).toMatchObject({ kind: "app_build_failed", retryable: false, details: { specifier: "npm:greet@^9", line: 1 } });
    // Nothing was created.
    expectError(await server.client.post(`/app/${done.appId}/api/run`, {}, { token: res.body.token }), 404, "app_not_found");
  });
});
