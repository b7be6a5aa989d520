import { afterAll, beforeAll, expect, it } from "vitest";
import { makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";
import { settle } from "./helpers/builds.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

function npmModule(id: string, marker: string): string {
  return `import { greet } from "npm:greet@^1.0.0";
export const manifest = ${JSON.stringify(manifestOf(id, ["run"]))};
export default {
  async fetch(request) {
    return Response.json({ ok: true, value: ${JSON.stringify(marker)} + " " + greet("x") });
  },
};
`;
}



/**
 * DECISIONS §10: a newer write to an app supersedes its build waiting or running. Only a newer
 * build did: a write that published at once (no npm imports) was overwritten when the older build
 * finished, which reported itself published. Such writes now supersede it in their transaction,
 * and a build publishes only while it is still active (its row held as it publishes).
 */
describeEachDialect("builds against newer writes that publish at once", (dialect) => {
  let server: TestServer;
  let registry: NpmRegistry;
  beforeAll(async () => {
    registry = await startNpmRegistry();
    server = await startServer({ dialect, env: { NPM_REGISTRY_URL: registry.url, BUILD_RETRY_MS: "20" } });
  });
  afterAll(async () => {
    await server.close();
    await registry.close();
  });

  it("a PUT, and a PATCH, made while an earlier npm write builds stand; the build ends superseded and publishes nothing", async () => {
    const user = await makeUser(server);
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("lost-update")) }, { token: user.token });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const held = registry.hold();
    // Older write: needs a build (202).
    const older = await server.client.put(`/app/${id}`, { module: npmModule("lost-update", "older") }, { token: user.token });
    expect(older.status, JSON.stringify(older.body)).toBe(202);
    await held.reached;
    // Newer write: no npm imports, publishes at once as revision 2.
    const newer = await server.client.put(`/app/${id}`, { module: moduleSource(manifestOf("lost-update"), "// NEWER WRITE") }, { token: user.token });
    expect(newer.status, JSON.stringify(newer.body)).toBe(200);
    expect(newer.body.revision).toBe(2);
    held.release();
    const done = await settle(server, older.body, user.token);
    expect({ state: done.state, source: (await server.client.get(`/app/${id}/source`, { token: user.token })).body.module.includes("NEWER WRITE") }).toEqual({
      state: "superseded",
      source: true,
    });

    const again = registry.hold();
    const building = await server.client.put(`/app/${id}`, { module: npmModule("lost-update", "older again") }, { token: user.token });
    expect(building.status, JSON.stringify(building.body)).toBe(202);
    await again.reached;
    const patched = await server.client.patch(`/app/${id}/source`, { expected_revision: 2, edits: [{ bucket: "module", old_string: "// NEWER WRITE", new_string: "// PATCHED" }] }, { token: user.token });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    again.release();
    expect((await settle(server, building.body, user.token)).state).toBe("superseded");
    const source = (await server.client.get(`/app/${id}/source`, { token: user.token })).body;
    expect({ revision: source.revision, patched: (source.module as string).includes("// PATCHED") }).toEqual({ revision: 3, patched: true });
  });

  it("a copy that needs a build answers a retry with the same idempotency_key with that build, and after it publishes with its copy", async () => {
    const user = await makeUser(server);
    const created = await settle(server, (await server.client.post("/app", { module: npmModule("copy-idem-src", "src") }, { token: user.token })).body, user.token);
    expect(created.state).toBe("published");
    const held = registry.hold();
    const body = { manifest_id: "copy-idem-dst", idempotency_key: "copy-key-1" };
    const first = await server.client.post(`/app/${created.appId}/copy`, body, { token: user.token });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const again = await server.client.post(`/app/${created.appId}/copy`, body, { token: user.token });
    expect([again.status, again.body.buildId, again.body.appId]).toEqual([202, first.body.buildId, first.body.appId]);
    const other = await server.client.post(`/app/${created.appId}/copy`, { ...body, manifest_id: "copy-idem-other" }, { token: user.token });
    expect([other.status, other.body.error?.kind]).toEqual([409, "idempotency_conflict"]);
    held.release();
    expect((await settle(server, first.body, user.token)).state).toBe("published");
    const replayed = await server.client.post(`/app/${created.appId}/copy`, body, { token: user.token });
    expect([replayed.status, replayed.body.id]).toEqual([200, first.body.appId]);
  });
});
