import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const MODULE = `export const manifest = {
  id: "per-app",
  displayName: "Counter",
  description: "counts things",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: {
    "Get-Count": { title: "Read the count", access: "read", output: { $ref: "#/$defs/count", $defs: { count: { type: "integer", minimum: 0 } } } },
    bump: { title: "Add to the count", access: "write", input: { type: "object", properties: { by: { type: "integer" } }, required: ["by"] } },
  },
};
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    const n = (await env.KV.get("n")) ?? 0;
    if (op === "bump") { const { by } = await request.json(); await env.KV.set("n", n + by); return Response.json({ ok: true, value: n + by }); }
    return Response.json({ ok: true, value: n });
  },
};
`;

async function connect(url: string, token: string) {
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

describe("MCP: POST /app/{id}/mcp, one app's operations as tools", () => {
  let server: TestServer;
  let owner: FixtureUser;
  let viewer: FixtureUser;
  let appId: string;
  beforeAll(async () => {
    server = await startServer();
    [owner, viewer] = [await makeUser(server), await makeUser(server)];
    appId = (await server.client.post("/app", { module: MODULE }, { token: owner.token })).body.id;
    const api = `/api/v1/apps/${appId}`;
    expect((await server.client.post(`${api}/shares`, { grantee: viewer.handle, role: "viewer" }, { token: owner.token })).status).toBe(201);
    expect((await server.client.post(`${api}/shares/accept`, undefined, { token: viewer.token })).status).toBe(200);
  });
  afterAll(async () => server.close());

  it("the owner sees every operation as a tool, with its declared input schema, and runs them", async () => {
    const client = await connect(`${server.url}/app/${appId}/mcp`, owner.token);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["bump", "get_count"]);
    expect(tools.find((t) => t.name === "bump")?.inputSchema).toMatchObject({ properties: { by: { type: "integer" } }, required: ["by"] });
    expect(client.getInstructions()).toContain("Counter: counts things");
    expect((await client.callTool({ name: "bump", arguments: { by: 2 } })).structuredContent).toEqual({ ok: true, value: 2 });
    expect((await client.callTool({ name: "get_count", arguments: {} })).structuredContent).toEqual({ ok: true, value: 2 });
    const bad = await client.callTool({ name: "bump", arguments: { by: "two" } });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ ok: false, error: { kind: "invalid_input" } });
    await client.close();
  });

  it("an operation whose input schema is not (only) an object keeps its tool and leaves the others theirs", async () => {
    const module = `export const manifest = { id: "odd-inputs", routes: {
      maybe: { access: "read", input: { type: ["object", "null"], properties: { n: { type: "integer" } } } },
      list: { access: "read", input: { type: "array" } },
      plain: { access: "read" },
    } };
    export default { async fetch(request) { return Response.json({ ok: true, value: request.headers.get("x-svc-op") }); } };`;
    const created = await server.client.post("/app", { module }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const client = await connect(`${server.url}/app/${created.body.id}/mcp`, owner.token);
    const { tools } = await client.listTools();
    expect(Object.fromEntries(tools.map((t) => [t.name, t.inputSchema]))).toEqual({
      maybe: { type: "object", properties: { n: { type: "integer" } } },
      list: { type: "object" },
      plain: { type: "object" },
    });
    expect((await client.callTool({ name: "maybe", arguments: { n: 1 } })).structuredContent).toEqual({ ok: true, value: "maybe" });
    // No object passes an array schema: the op refuses it, with its own kind.
    expect((await client.callTool({ name: "list", arguments: {} })).structuredContent).toMatchObject({ ok: false, error: { kind: "invalid_input" } });
    await client.close();
  });

  it("annotations say which tools only read; an operation with a declared output has an outputSchema its structuredContent validates against", async () => {
    const client = await connect(`${server.url}/app/${appId}/mcp`, owner.token);
    const { tools } = await client.listTools();
    const read = tools.find((t) => t.name === "get_count");
    const write = tools.find((t) => t.name === "bump");
    expect(read?.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
    expect(write?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(write?.outputSchema).toBeUndefined();
    expect(read?.outputSchema).toMatchObject({ type: "object", properties: { value: { $ref: "#/$defs/count" } }, $defs: { count: { type: "integer" } } });
    const answer = await client.callTool({ name: "get_count", arguments: {} });
    const validate = new Ajv2020({ strict: false }).compile(read?.outputSchema ?? {});
    expect(validate(answer.structuredContent), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ok: true, value: -1 })).toBe(false);
    await client.close();
  });

  it("a viewer sees and runs only read operations; describe shows the same", async () => {
    const client = await connect(`${server.url}/app/${appId}/mcp`, viewer.token);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["get_count"]);
    expect((await client.callTool({ name: "get_count", arguments: {} })).structuredContent).toEqual({ ok: true, value: 2 });
    await client.close();
    const described = await server.client.get(`/app/${appId}/describe`, { token: viewer.token });
    expect(described.body.operations.map((o: { id: string }) => o.id)).toEqual(["Get-Count"]);
    expect((await server.client.get(`/app/${appId}/describe`, { token: owner.token })).body.operations).toHaveLength(2);
  });

  it("a stranger is refused (403), GET is 405", async () => {
    const stranger = await makeUser(server);
    const res = await fetch(`${server.url}/app/${appId}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${stranger.token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { kind: string } }).error.kind).toBe("forbidden");
    expectError(await server.client.get(`/app/${appId}/mcp`, { token: owner.token }), 405, "method_not_allowed");
  });
});
