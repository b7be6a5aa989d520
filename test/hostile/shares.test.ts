import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { LogCapture } from "../helpers/logs.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const source = (id: string) => `export const manifest = { id: ${JSON.stringify(id)}, routes: { bump: { access: "write" } } };
export default { async fetch() { return Response.json({ ok: true, value: "bumped" }); } };
`;

/** Shares, attacked: other people's share ids, escalation by a grantee, hostile grantee strings. */
describeEachDialect("hostile: shares", (dialect) => {
  let server: TestServer;
  let alice: FixtureUser;
  let mallory: FixtureUser;
  let bob: FixtureUser;
  let aliceApp: string;
  let malloryApp: string;

  const logs = new LogCapture();

  beforeAll(async () => {
    // Debug: every answered request is logged, so every URL that reaches a log is checked.
    server = await startServer({ dialect, env: { LOG_LEVEL: "debug" }, logStream: logs });
    [alice, mallory, bob] = [await makeUser(server), await makeUser(server), await makeUser(server)];
    aliceApp = (await server.client.post("/app", { module: source("alice-app") }, { token: alice.token })).body.id;
    malloryApp = (await server.client.post("/app", { module: source("mallory-app") }, { token: mallory.token })).body.id;
  });
  afterAll(async () => server.close());

  it("a share id revokes only on its own app: another owner cannot reach it through their app's path", async () => {
    const share = await server.client.post(`/api/v1/apps/${aliceApp}/shares`, { grantee: bob.handle }, { token: alice.token });
    const shareId = share.body.shareId as string;
    const attempt = await server.client.post(`/api/v1/apps/${malloryApp}/shares/${shareId}/revoke`, undefined, { token: mallory.token });
    expect(attempt.body).toMatchObject({ ok: true, revoked: false });
    expectError(await server.client.post(`/api/v1/apps/${aliceApp}/shares/${shareId}/revoke`, undefined, { token: mallory.token }), 403, "forbidden");
    expect((await server.client.get(`/api/v1/apps/${aliceApp}/shares`, { token: alice.token })).body.shares).toHaveLength(1);
    expect((await server.client.post(`/api/v1/apps/${aliceApp}/shares/not-a-share-id/revoke`, undefined, { token: alice.token })).body.revoked).toBe(false);
  });

  it("a grantee cannot widen their own access or hand it on, and an app token cannot accept anything", async () => {
    const carol = await makeUser(server);
    expect((await server.client.post(`/api/v1/apps/${aliceApp}/shares`, { grantee: carol.handle, role: "viewer" }, { token: alice.token })).status).toBe(201);
    expect((await server.client.post(`/api/v1/apps/${aliceApp}/shares/accept`, undefined, { token: carol.token })).status).toBe(200);
    expectError(await server.client.post(`/api/v1/apps/${aliceApp}/shares`, { grantee: carol.handle, role: "collaborator" }, { token: carol.token }), 403, "forbidden");
    expectError(await server.client.post(`/api/v1/apps/${aliceApp}/shares`, { grantee: mallory.handle }, { token: carol.token }), 403, "forbidden");
    expectError(await server.client.post(`/app/${aliceApp}/api/bump`, {}, { token: carol.token }), 403, "forbidden");
    const anonymous = await server.client.post("/app", { module: source("anon-app") });
    expectError(await server.client.post(`/api/v1/apps/${aliceApp}/shares/accept`, undefined, { token: anonymous.body.token }), 401, "unauthorized");
    // Sharing an unclaimed app is an owner's right nobody holds yet.
    expectError(await server.client.post(`/api/v1/apps/${anonymous.body.id}/shares`, { grantee: bob.handle }, { token: alice.token }), 403, "forbidden");
  });

  it("hostile grantee strings are refused cleanly and never match someone else", async () => {
    const cases: [unknown, number, string][] = [
      ["x".repeat(255), 400, "invalid_request"],
      ["", 400, "invalid_request"],
      [{ handle: bob.handle }, 400, "invalid_request"],
      [`${bob.handle}' OR '1'='1`, 404, "grantee_not_found"],
      ["%", 404, "grantee_not_found"],
      [`${bob.handle.slice(0, 3)}%`, 404, "grantee_not_found"],
      // NUL is refused before any route runs (http/nul-guard.ts).
      ["\u0000", 400, "invalid_request"],
      ["a\u0000b@example.test", 400, "invalid_request"],
      ["no-dot@localhost", 400, "invalid_request"],
    ];
    for (const [grantee, status, kind] of cases) {
      expectError(await server.client.post(`/api/v1/apps/${malloryApp}/shares`, { grantee }, { token: mallory.token }), status, kind);
    }
    expect((await server.client.get(`/api/v1/apps/${malloryApp}/shares`, { token: mallory.token })).body.shares).toEqual([]);
  });

  it("a share link's id revokes only on its own app, its token never reaches the log, and forged tokens are refused cheaply", async () => {
    const made = await server.client.post(`/api/v1/apps/${aliceApp}/share-links`, { role: "viewer" }, { token: alice.token });
    const { id, url } = made.body.link as { id: string; url: string };
    const token = url.slice(url.lastIndexOf("/") + 1);
    expect((await server.client.delete(`/api/v1/apps/${malloryApp}/share-links/${id}`, { token: mallory.token })).body.revoked).toBe(false);
    expect((await server.client.get(`/api/v1/apps/${aliceApp}/share-links`, { token: alice.token })).body.links).toHaveLength(1);
    // Visiting the page puts its path in the request log: the token is cut there.
    await server.client.get(new URL(url).pathname, { headers: { accept: "text/html" } });
    await server.client.get(`/sign-in?return_to=${encodeURIComponent(new URL(url).pathname)}`, { headers: { accept: "text/html" } });
    expect(logs.text).toContain("/share/[redacted]");
    expect(logs.text).not.toContain(token);
    // A token of another kind, a truncated one, and one with a bad checksum: 404, nothing granted.
    for (const forged of [bob.token, token.slice(0, -1), `${token.slice(0, -1)}${token.endsWith("a") ? "b" : "a"}`]) {
      expectError(await server.client.post("/api/v1/share-links/accept", { token: forged }, { token: mallory.token }), 404, "not_found");
    }
    expectError(await server.client.post(`/app/${aliceApp}/api/bump`, {}, { token: mallory.token }), 403, "forbidden");
  });
});
