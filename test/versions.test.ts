import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/** Revision `n` of the app: its marker names the revision; from 3 on it declares `bump`; odd ones read a secret. */
const source = (n: number, id = "versioned") => `export const manifest = {
  id: ${JSON.stringify(id)},
  routes: { look: { access: "read" }${n >= 3 ? `, bump: { access: "write" }` : ""} },
};
export default {
  async fetch(request, env) {
    ${n % 2 === 1 ? "const key = env.API_KEY;" : ""}
    return Response.json({ ok: true, value: "rev-${n}" });
  },
};
`;

/** Issue 16, versions: kept to the plan's count, read, restored under the revision guard. */
describeEachDialect("versions", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let appId: string;
  const url = (path = "") => `/app/${appId}/versions${path}`;

  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());
  beforeEach(async () => {
    owner = await makeUser(server);
    appId = (await server.client.post("/app", { module: source(1) }, { token: owner.token })).body.id;
  });

  async function writeUpTo(last: number): Promise<void> {
    for (let n = 2; n <= last; n++) expect((await server.client.put(`/app/${appId}`, { module: source(n) }, { token: owner.token })).status).toBe(200);
  }

  it("25 writes on the free plan keep exactly the newest 20; a pruned revision is 403, one never reached 404", async () => {
    await writeUpTo(25);
    const listed = await server.client.get(url(), { token: owner.token });
    expect(listed.status).toBe(200);
    expect(listed.body.versions.map((v: { revision: number }) => v.revision)).toEqual(Array.from({ length: 20 }, (_, i) => 25 - i));
    expect(listed.body.versions[0]).toEqual({ revision: 25, createdAt: expect.any(String), sizeBytes: Buffer.byteLength(source(25)), restorable: true });
    const six = await server.client.get(url("/6"), { token: owner.token });
    expect(six.body).toMatchObject({ ok: true, id: appId, revision: 6, module: source(6), ui: null, styles: null });
    expectError(await server.client.get(url("/5"), { token: owner.token }), 403, "version_history_unavailable");
    expectError(await server.client.get(url("/26"), { token: owner.token }), 404, "not_found");
    for (const bad of ["0", "-1", "abc", "1.5", "9".repeat(16)]) expectError(await server.client.get(url(`/${bad}`), { token: owner.token }), 400, "invalid_revision");
    // A paid plan keeps more: nothing older comes back, but the next writes prune nothing.
    await server.ctx.users.setPlan(owner.handle, "pro");
    await server.client.put(`/app/${appId}`, { module: source(26) }, { token: owner.token });
    expect((await server.client.get(url(), { token: owner.token })).body.versions).toHaveLength(21);
  });

  it("restore publishes the old source as revision N+1; If-Match races leave one winner; the precondition is required", async () => {
    await writeUpTo(4);
    expectError(await server.client.post(url("/2/restore"), {}, { token: owner.token }), 428, "precondition_required");
    expectError(await server.client.post(url("/2/restore"), {}, { token: owner.token, headers: { "if-match": "4" } }), 412, "invalid_if_match");
    expectError(await server.client.post(url("/2/restore"), {}, { token: owner.token, headers: { "if-match": '"3"' } }), 412, "revision_mismatch");

    const restored = await server.client.post(url("/2/restore"), {}, { token: owner.token, headers: { "if-match": '"4"' } });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body).toMatchObject({ ok: true, id: appId, revision: 5, restoredFrom: 2, unsetSecrets: [] });
    expect(restored.headers.get("etag")).toBe('"5"');
    const current = await server.client.get(`/app/${appId}/source`, { token: owner.token });
    expect(current.body).toMatchObject({ revision: 5, module: source(2) });
    expect((await server.client.post(`/app/${appId}/api/look`, {}, { token: owner.token })).body.value).toBe("rev-2");

    const race = await Promise.all([3, 4].map((n) => server.client.post(url(`/${n}/restore`), { expected_revision: 5 }, { token: owner.token })));
    expect(race.map((r) => r.status).sort()).toEqual([200, 412]);
    const loser = race.find((r) => r.status === 412);
    expect(loser).toBeDefined();
    if (loser !== undefined) expectError(loser, 412, "revision_mismatch");
    expect((await server.client.get(`/app/${appId}/source`, { token: owner.token })).body.revision).toBe(6);
  });

  it("a revision lacking an operation a routine calls is not restorable unless forced; unset secrets are reported", async () => {
    await writeUpTo(4);
    expect((await server.client.post(`/api/v1/apps/${appId}/routines`, { op: "bump", interval: "daily" }, { token: owner.token })).status).toBe(201);
    const versions = (await server.client.get(url(), { token: owner.token })).body.versions as { revision: number; restorable: boolean; notRestorable?: unknown }[];
    expect(versions.map((v) => [v.revision, v.restorable])).toEqual([
      [4, true],
      [3, true],
      [2, false],
      [1, false],
    ]);
    expect(versions[2]?.notRestorable).toEqual({ reason: "operation_in_use", operations: ["bump"] });
    const refused = expectError(await server.client.post(url("/1/restore"), {}, { token: owner.token, headers: { "if-match": '"4"' } }), 422, "version_not_restorable");
    expect(refused.details).toEqual({ reason: "operation_in_use", operations: ["bump"] });
    const forced = await server.client.post(url("/1/restore"), { force: true }, { token: owner.token, headers: { "if-match": '"4"' } });
    expect(forced.body).toMatchObject({ revision: 5, restoredFrom: 1, unsetSecrets: ["API_KEY"], warnings: [expect.stringContaining("API_KEY")] });
    await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: "x" }, { token: owner.token });
    const withSecret = await server.client.post(url("/3/restore"), {}, { token: owner.token, headers: { "if-match": '"5"' } });
    expect(withSecret.body).toMatchObject({ revision: 6, unsetSecrets: [] });
    expect(withSecret.body).not.toHaveProperty("warnings");
  });

  it("reading versions needs source access, restoring needs write access (403 for an existing app, 404 only for none)", async () => {
    const stranger = await makeUser(server);
    const viewer = await makeUser(server);
    await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: viewer.handle, role: "viewer" }, { token: owner.token });
    await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: viewer.token });
    for (const user of [stranger, viewer]) {
      expectError(await server.client.get(url(), { token: user.token }), 403, "forbidden");
      expectError(await server.client.get(url("/1"), { token: user.token }), 403, "forbidden");
      expectError(await server.client.post(url("/1/restore"), {}, { token: user.token, headers: { "if-match": '"1"' } }), 403, "forbidden");
    }
    expectError(await server.client.get(url()), 403, "forbidden");
    expectError(await server.client.get("/app/00000000-0000-4000-8000-000000000000/versions", { token: owner.token }), 404, "app_not_found");
    expectError(await server.client.post(url("/1/restore"), { force: "yes" }, { token: owner.token, headers: { "if-match": '"1"' } }), 400, "invalid_request");
    expectError(await server.client.post(url("/1/restore"), { snapshot: 1, extra: true }, { token: owner.token, headers: { "if-match": '"1"' } }), 400, "invalid_request");
    // An unclaimed app's own token reads and restores its versions.
    const anon = await server.client.post("/app", { module: source(1, "anon-versions") });
    await server.client.put(`/app/${anon.body.id}`, { module: source(2, "anon-versions") }, { token: anon.body.token });
    const restored = await server.client.post(`/app/${anon.body.id}/versions/1/restore`, {}, { token: anon.body.token, headers: { "if-match": '"2"' } });
    expect(restored.body).toMatchObject({ revision: 3, restoredFrom: 1 });
  });
});
