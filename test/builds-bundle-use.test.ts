import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { DAY, type ManualClock } from "../src/config/clock.ts";
import { BuildQueue } from "../src/domain/builds/queue.ts";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import { settle } from "./helpers/builds.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const GREET = `import { greet } from "npm:greet@^1.0.0";
export const manifest = { id: "bundle-greeter", routes: { run: {} } };
export default { async fetch() { return Response.json({ ok: true, value: greet("ada") }); } };`;

/**
 * A write whose npm imports are already bundled publishes at once, naming the bundle
 * (Apps.withBundle → BuildQueue.bundled). The build sweep deletes bundles no kept revision names
 * once a day old; it went by when the bundle was made, so one landing between the write's check
 * and its commit (another instance, or the scheduler between two awaits) left a revision whose
 * bundle was gone, and every call of it failed. Finding a bundle now counts as using it.
 */
describeEachDialect("a build bundle found by a write", (dialect) => {
  let registry: NpmRegistry;
  let server: TestServer;
  let owner: FixtureUser;
  beforeAll(async () => {
    registry = await startNpmRegistry();
    server = await startServer({ dialect, clock: "manual", env: { NPM_REGISTRY_URL: registry.url, NPM_TOKEN: "registry-secret", BUILD_RETRY_MS: "20" } });
    owner = await makeUser(server);
  });
  afterAll(async () => {
    await server?.close();
    await registry?.close();
  });

  it("is not swept before the revision naming it commits: the app published at once runs", { timeout: 120_000 }, async () => {
    const first = await server.client.post("/app", { module: GREET }, { token: owner.token });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect((await settle(server, first.body, owner.token)).state).toBe("published");
    // The app goes; its bundle stays, unreferenced, and is old enough to sweep.
    expect((await server.client.delete(`/app/${first.body.appId as string}`, { token: owner.token })).status).toBe(200);
    (server.clock as ManualClock).advance(2 * DAY);

    // The sweep runs right after the write found the bundle (as it may, on any instance).
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with the queue as its `this`
    const original = BuildQueue.prototype.bundled;
    const found = vi.spyOn(BuildQueue.prototype, "bundled").mockImplementationOnce(async function (this: BuildQueue, prepared) {
      const digest = await original.call(this, prepared);
      await server.ctx.builds.sweep();
      return digest;
    });
    const again = await server.client.post("/app", { module: GREET }, { token: owner.token });
    found.mockRestore();
    // Published at once, from the bundle the first build made.
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    const appId = again.body.id as string;
    const called = await server.client.post(`/app/${appId}/api/run`, {}, { token: owner.token });
    expect(called.status, JSON.stringify(called.body)).toBe(200);
  });
});
