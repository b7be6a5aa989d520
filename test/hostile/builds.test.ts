import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, manifestOf } from "../helpers/apps.ts";
import { fillQueue } from "../helpers/builds.ts";
import type { ApiResponse } from "../helpers/client.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startNpmRegistry, type NpmRegistry } from "../helpers/npm-registry.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const TERMINAL = ["published", "failed", "superseded", "canceled", "expired"];

function npmModule(id: string, imports: string, expr = "1"): string {
  return `${imports}
export const manifest = ${JSON.stringify(manifestOf(id, ["run"]))};
export default { async fetch() { return Response.json({ ok: true, value: ${expr} }); } };
`;
}

async function settle(server: TestServer, res: ApiResponse): Promise<ApiResponse["body"]> {
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  let body = res.body;
  for (let i = 0; i < 60 && !TERMINAL.includes(body.state); i++) {
    body = (await server.client.get(new URL(body.statusUrl).pathname, { token: res.body.token, headers: { prefer: "wait=5" } })).body;
  }
  return body;
}

/**
 * Builds, attacked: package specifiers written to escape, packages that read the control plane's
 * files or never finish loading, and a registry whose tarballs live on another origin.
 */
describeEachDialect("hostile: builds", (dialect) => {
  let server: TestServer;
  let registry: NpmRegistry;
  let tarballs: NpmRegistry;
  beforeAll(async () => {
    tarballs = await startNpmRegistry();
    registry = await startNpmRegistry({ tarballsAt: tarballs.url });
    server = await startServer({ dialect, env: { NPM_REGISTRY_URL: registry.url, NPM_TOKEN: "registry-only-secret" } });
  });
  afterAll(async () => {
    await server.close();
    await registry.close();
    await tarballs.close();
  });

  it("specifiers written to escape the package tree or the registry are refused at the write, naming the line", async () => {
    const hostile = [
      "npm:../../etc/passwd",
      "npm:greet@1/../../../package.json",
      "npm:greet@1/./index.js",
      "npm:@evil/../greet@1",
      "npm:GREET@1",
      `npm:${"a".repeat(215)}@1`,
      "npm:greet@1 || >=0.0.0 <1 ; rm -rf /",
      "npm:",
      "npm:@scope",
      "file:///etc/passwd",
      "data:text/javascript,export default 1",
      "/etc/passwd",
      "node:child_process",
    ];
    for (const specifier of hostile) {
      const res = await server.client.post("/app", { module: npmModule("escape", `\n\nimport x from ${JSON.stringify(specifier)};`) });
      const error = expectError(res, 400, "app_build_unsupported");
      expect(error.details, specifier).toMatchObject({ specifier, line: 3 });
    }
    // A computed import() can load nothing that was not declared.
    const computed = await server.client.post("/app", { module: npmModule("computed", "", `await import("npm:" + "greet@1")`) });
    expect(expectError(computed, 400, "app_build_unsupported").details).toMatchObject({ line: 3 });
  });

  it("a package that reads the control plane's files does not build: fs is not served", async () => {
    const done = await settle(server, await server.client.post("/app", { module: npmModule("sneaky", `import s from "npm:sneaky@1";`, "s") }));
    expect(done).toMatchObject({ state: "failed", error: { kind: "app_build_failed" } });
    expect(done.error.message).toMatch(/"fs"/);
    expect(JSON.stringify(done)).not.toContain("root:");
  });

  it("a bundle reads no file outside its packages: not the secrets key by a relative path, not a host file by an absolute one, not through the app's own require", async () => {
    const key = readFileSync(join(server.config.dataDir, "secrets.key"), "utf8").trim();
    const cases: [string, string, string][] = [
      ["peek", `import k from "npm:peek@1";`, "k"],
      ["abspeek", `import h from "npm:abspeek@1";`, "h"],
      ["required", `import g from "npm:greet@1";\nconst host = require("/etc/passwd");`, "host"],
    ];
    for (const [id, imports, value] of cases) {
      const done = await settle(server, await server.client.post("/app", { module: npmModule(id, imports, value) }));
      expect(done, id).toMatchObject({ state: "failed", error: { kind: "app_build_failed" } });
      expect(done.error.message, id).toContain("may read only its packages' files, not a file outside its packages");
      // Nothing of the file, and not where the service keeps its data.
      expect(JSON.stringify(done), id).not.toContain(key);
      expect(JSON.stringify(done), id).not.toContain("root:");
      expect(JSON.stringify(done), id).not.toContain(server.config.dataDir);
    }
  });

  it("a package whose top level never returns fails its load check; the control plane keeps answering meanwhile", { timeout: 60_000 }, async () => {
    const accepted = await server.client.post("/app", { module: npmModule("spinner", `import "npm:spin@1";`) });
    const settling = settle(server, accepted);
    // While the throwaway isolate spins, health checks answer as usual.
    for (let i = 0; i < 10; i++) {
      const started = Date.now();
      expect((await server.client.get("/healthz")).status).toBe(200);
      expect(Date.now() - started).toBeLessThan(1_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const done = await settling;
    expect(done).toMatchObject({ state: "failed", error: { kind: "app_build_failed" } });
    expect(done.error.message).toMatch(/within 10 s/);
  });

  it("the registry token goes to the registry's origin only, never to where its packuments point tarballs", async () => {
    const done = await settle(server, await server.client.post("/app", { module: npmModule("elsewhere", `import { greet } from "npm:greet@2";`, `greet("t")`) }));
    expect(done.state).toBe("published");
    expect(registry.requests.some((r) => r.authorization === "Bearer registry-only-secret")).toBe(true);
    expect(tarballs.requests.length).toBeGreaterThan(0);
    expect(tarballs.requests.every((r) => r.authorization === undefined)).toBe(true);
  });

  it("one writer cannot fill the build queue: past 10 waiting builds it gets 503 app_build_capacity, others still get in", async () => {
    const mallory = await makeUser(server);
    const alice = await makeUser(server);
    await fillQueue(server, 10, JSON.stringify({ kind: "user", userId: mallory.id }));
    try {
      const module = npmModule("flood", `import { greet } from "npm:greet@1";`, `"flood " + greet("f")`);
      expectError(await server.client.post("/app", { module }, { token: mallory.token }), 503, "app_build_capacity");
      expect((await server.client.post("/app", { module }, { token: alice.token })).status).toBe(202);
    } finally {
      await server.ctx.db.deleteFrom("builds").where("lease_holder", "=", "test").execute();
    }
  });
});
