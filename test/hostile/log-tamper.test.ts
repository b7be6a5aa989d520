import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeUser, type FixtureUser } from "../helpers/apps.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// The app's top level replaces what the console's capture could have leaned on (logs.worker.js
// runs in the same isolate, before it): Set's and Array's methods throw from then on. Its lines
// are still kept, counted and attributed as anyone's are.
const TAMPERER = `const refuse = () => { throw new Error("tampered"); };
for (const name of ["add", "delete", "has"]) Set.prototype[name] = refuse;
Set.prototype[Symbol.iterator] = refuse;
for (const name of ["push", "slice", "concat", "map", "join"]) Array.prototype[name] = refuse;
export const manifest = { id: "tamperer", routes: { flood: { access: "read" }, assert: { access: "read" } } };
export default { async fetch(request) {
  const op = request.headers.get("x-svc-op");
  if (op === "flood") for (let i = 0; i < 100; i++) console.log("line", i);
  if (op === "assert") console.assert(false, "tampered", 1);
  return new Response('{"ok":true,"value":"done"}', { headers: { "content-type": "application/json" } });
} };`;

interface Line {
  requestId: string | null;
  level: string;
  message: string;
}

describe("hostile: an app that replaces Set's and Array's methods before it logs", () => {
  let server: TestServer;
  let owner: FixtureUser;
  let appId: string;
  const lines = async (op: string, requestId: string): Promise<Line[]> => {
    const res = await server.client.get(`/app/${appId}/logs?op=${op}&limit=1000`, { token: owner.token });
    expect(res.status).toBe(200);
    return (res.body.lines as Line[]).filter((l) => l.requestId === requestId).reverse();
  };

  beforeAll(async () => {
    server = await startServer();
    owner = await makeUser(server);
    const created = await server.client.post("/app", { module: TAMPERER }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id as string;
  });
  afterAll(async () => server.close());

  it("a call's 100 lines: 64 kept in order, then the marker counting the other 36, twice over", async () => {
    for (const requestId of ["req-tamper-1", "req-tamper-2"]) {
      const res = await server.client.post(`/app/${appId}/api/flood`, {}, { token: owner.token, headers: { "x-request-id": requestId } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const got = await lines("flood", requestId);
      expect(got).toHaveLength(65);
      expect(got.slice(0, 64).map((l) => l.message)).toEqual(Array.from({ length: 64 }, (_, i) => `line ${i}`));
      expect(got[64]?.message).toContain("[truncated] 36 more lines not kept");
    }
  });

  it("console.assert still writes its line", async () => {
    const res = await server.client.post(`/app/${appId}/api/assert`, {}, { token: owner.token, headers: { "x-request-id": "req-tamper-assert" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await lines("assert", "req-tamper-assert")).map(({ level, message }) => ({ level, message }))).toEqual([{ level: "error", message: "Assertion failed tampered 1" }]);
  });
});
