import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDialect } from "./helpers/dialects.ts";
import { serverProcess, type ServerProcess } from "./helpers/server-process.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";

const MODULE = `import { greet } from "npm:greet@^1.0.0";
export const manifest = { id: "survivor", routes: { run: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: greet("crash") }); } };
`;

/**
 * Issue 17: build jobs live in the database. A server killed (SIGKILL of its whole process
 * group) while a build is under way leaves the job leased to a dead holder; once the lease runs
 * out, the restarted server takes it over and publishes it.
 */
describeEachDialect("a build survives kill -9", (dialect) => {
  let server: ServerProcess;
  let registry: NpmRegistry;
  beforeAll(async () => {
    registry = await startNpmRegistry();
    // A dead holder's lease runs out after a second, not the production 30.
    server = await serverProcess(dialect, { NPM_REGISTRY_URL: registry.url, BUILD_LEASE_MS: "1000" });
  });
  afterAll(async () => {
    await server.close();
    await registry.close();
  });
  const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => server.api(method, path, body, headers);

  it("the restarted server takes the job over and publishes it", { timeout: 120_000 }, async () => {
    await server.start();
    const held = registry.hold();
    const accepted = (await (await api("POST", "/app", { module: MODULE })).json()) as { buildId: string; appId: string; state: string };
    expect(accepted.state).not.toBe("published");
    // The build is resolving: its packument request waits in the registry when the kill lands.
    await held.reached;
    await server.killGroup();
    held.release();
    await server.start();
    let status: { state: string; attempts: number; revision?: number } = { state: "queued", attempts: 0 };
    for (let i = 0; i < 20 && !["published", "failed", "superseded", "canceled", "expired"].includes(status.state); i++) {
      status = (await (await api("GET", `/api/v1/builds/${accepted.buildId}`, undefined, { prefer: "wait=5" })).json()) as typeof status;
    }
    expect(status).toMatchObject({ state: "published", revision: 1 });
    expect(status.attempts).toBeGreaterThanOrEqual(2);
    const ran = (await (await api("POST", `/app/${accepted.appId}/api/run`, {})).json()) as { value: unknown };
    expect(ran.value).toBe("hello, crash (greet 1.2.0)");
  });
});
