import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/**
 * U+0000 in any text a route passes on: PostgreSQL cannot store it, and each of these answered
 * 500 `internal_error` before the guard (http/nul-guard.ts). SQLite runs the same table.
 */
describeEachDialect("hostile: NUL characters in requests", (dialect) => {
  let server: TestServer;
  let user: FixtureUser;
  beforeAll(async () => {
    server = await startServer({ dialect });
    user = await makeUser(server);
  });
  afterAll(async () => server.close());

  it("answers 400 invalid_request wherever text reaches the store, and leaves op inputs (app data) alone", async () => {
    const cases: [string, string, unknown, string | undefined][] = [
      ["POST", "/api/auth/login", { login: "a\u0000b", password: "x" }, undefined],
      ["POST", "/api/auth/signup", { email: "a\u0000b@x.test", handle: "abc", password: "correct horse battery" }, undefined],
      ["GET", "/@a%00b/app", undefined, undefined],
      ["POST", "/api/token", { name: "a\u0000b" }, user.token],
      ["POST", "/api/pair/start", { label: "a\u0000b" }, undefined],
      ["GET", "/app?cursor=a%00b", undefined, user.token],
      ["POST", "/app", { module: "export const manifest = {id: \"a\u0000b\"};" }, user.token],
    ];
    for (const [method, path, body, token] of cases) {
      const res = await server.client.request(method, path, body, token === undefined ? {} : { token });
      expectError(res, 400, "invalid_request");
    }
    const created = await server.client.post("/app", {
      module: `export const manifest = { id: "echo", routes: { echo: { access: "read" } } };
export default { async fetch(request) { return Response.json({ ok: true, value: (await request.json()).s }); } };`,
    });
    const echoed = await server.client.post(`/app/${created.body.id}/api/echo`, { s: "a\u0000b" }, { token: created.body.token });
    expect(echoed.status, JSON.stringify(echoed.body)).toBe(200);
    expect(echoed.body.value).toBe("a\u0000b");
  });
});
