import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { makeUser } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

async function connect(url: string, token: string) {
  const client = new Client({ name: "hostile", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

// Operation ids chosen to collide once lower-cased, to run past 40 characters, and schemas
// with odd properties (the write accepts ids ^[a-zA-Z][a-zA-Z0-9_-]{0,63}$ only).
const HOSTILE = `export const manifest = {
  id: "hostile-tools",
  routes: {
    "get-x": { access: "read", input: { type: "object", properties: { c: { type: "object" } } } },
    "get_x": { access: "read" },
    "Get-X": { access: "read", input: { type: "object", properties: {} } },
    "${"Z".repeat(64)}": { access: "read" },
    "a-b_C": { access: "write" },
  },
};
export default { async fetch(request) { return Response.json({ ok: true, value: request.headers.get("x-svc-op") }); } };
`;

/** MCP, attacked: hostile operation ids and schemas, and tokens reaching for other apps. */
describeEachDialect("hostile: MCP", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  it("hostile operation ids and schemas still give unique, well-formed tool names that run the right operation", async () => {
    const created = await server.client.post("/app", { module: HOSTILE });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const client = await connect(`${server.url}/app/${created.body.id}/mcp`, created.body.token);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toHaveLength(5);
    expect(new Set(names).size).toBe(5);
    for (const name of names) expect(name).toMatch(/^[a-z0-9_]{1,40}$/);
    expect(names.slice(0, 3)).toEqual(["get_x", "get_x_2", "get_x_3"]);
    // Each name runs its own operation, and a string where an object is declared does not crash the server.
    expect((await client.callTool({ name: "get_x_2", arguments: {} })).structuredContent).toEqual({ ok: true, value: "get_x" });
    expect((await client.callTool({ name: "get_x", arguments: { c: "{\"deep\":1}" } })).structuredContent).toEqual({ ok: true, value: "get-x" });
    expect((await client.callTool({ name: "get_x_3", arguments: {} })).structuredContent).toEqual({ ok: true, value: "Get-X" });
    expect(names).toContain("z".repeat(40));
    expect(names).toContain("a_b_c");
    await client.close();
  });

  it("an app's token reaches only its own app, through either MCP endpoint", async () => {
    const mine = await server.client.post("/app", { module: HOSTILE.replace("hostile-tools", "mine") });
    const theirs = await server.client.post("/app", { module: HOSTILE.replace("hostile-tools", "theirs") });
    const res = await fetch(`${server.url}/app/${theirs.body.id}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${mine.body.token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_x", arguments: {} } }),
    });
    // An unclaimed app's page is anyone's to look at, but its operations are its token's only.
    const text = await res.text();
    expect(text).not.toContain('"value":"get-x"');
    expect(text).toContain('\\"kind\\":\\"forbidden\\"');
    const client = await connect(`${server.url}/mcp`, mine.body.token);
    for (const [name, args] of [
      ["get_source", { id: theirs.body.id }],
      ["update_app", { id: theirs.body.id, module: HOSTILE.replace("hostile-tools", "theirs") }],
      ["call_operation", { id: theirs.body.id, operation: "get_x", input: {} }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, name).toBe(true);
      expect((result.structuredContent as { error: { kind: string } }).error.kind, name).toBe("forbidden");
    }
    await client.close();
  });

  it("a signed-in person's MCP client cannot reach someone else's private app", async () => {
    const [alice, mallory] = [await makeUser(server), await makeUser(server)];
    const app = await server.client.post("/app", { module: HOSTILE.replace("hostile-tools", "alices") }, { token: alice.token });
    const client = await connect(`${server.url}/mcp`, mallory.token);
    const read = await client.callTool({ name: "get_source", arguments: { id: app.body.id } });
    expect((read.structuredContent as { error: { kind: string } }).error.kind).toBe("forbidden");
    await client.close();
    const res = await fetch(`${server.url}/app/${app.body.id}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${mallory.token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(res.status).toBe(403);
  });

  it("a request from outside cannot pass for the tool layer: forged tool-call headers leave it an http call that waits for nothing", async () => {
    const module = `export const manifest = { id: "forged-trigger", routes: { nap: {} } };
export default { async fetch(request) { await new Promise((resolve) => setTimeout(resolve, 200)); return Response.json({ ok: true, value: request.headers.get("x-svc-trigger") }); } };`;
    const created = await server.client.post("/app", { module });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // The key is 32 characters: forgeries of that length, in ASCII and not, among the rest.
    const forgeries = ["", "1", "x".repeat(32), "é".repeat(32), "guessed-key-of-the-right-shape-000000000000", "A".repeat(4096)];
    // Nine at once against eight run slots: an agent's ninth call would wait; a forged one is refused.
    const answers = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        server.client.post(`/app/${created.body.id}/api/nap`, {}, { token: created.body.token, headers: { "x-brickyard-tool-call": forgeries[i % forgeries.length] ?? "" } }),
      ),
    );
    expect(answers.filter((res) => res.status === 200).map((res) => res.body.value)).toEqual(Array(8).fill("http"));
    const refused = answers.filter((res) => res.status !== 200);
    expect(refused.map((res) => [res.status, res.body.error?.kind, res.body.error?.limit])).toEqual([[429, "app_busy", "concurrent_runs"]]);
  });
});
