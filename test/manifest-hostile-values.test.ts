import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolNames } from "../src/domain/access/operations-view.ts";
import { MAX_OPERATIONS } from "../src/domain/source/validate-manifest.ts";
import { expectError } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const FETCH = `export default { async fetch(request) { return Response.json({ ok: true, value: request.headers.get("x-svc-op") }); } };`;

/** What an app's manifest declares is hostile: names and numbers the tool layer and JSON must survive. */
describe("hostile values in a manifest", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => server.close());

  /** An anonymous create: no account needed, and the app token reaches the app's MCP endpoint. */
  const create = (id: string, routes: string) => server.client.post("/app", { module: `export const manifest = { id: "${id}", routes: ${routes} };\n${FETCH}` });

  it("an operation named constructor is a tool like any other, and the app's other tools stay", async () => {
    const created = await create("ctor-app", `{ constructor: { access: "read" }, hello: { access: "read" } }`);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const client = new Client({ name: "names", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/app/${created.body.id as string}/mcp`), { requestInit: { headers: { authorization: `Bearer ${created.body.token as string}` } } }));
    try {
      const { tools } = await client.listTools();
      // The SDK keeps tools in a plain object, where `constructor` is found on its prototype.
      expect(tools.map((t) => t.name).sort()).toEqual(["constructor_2", "hello"]);
      expect((await client.callTool({ name: "constructor_2", arguments: {} })).structuredContent).toEqual({ ok: true, value: "constructor" });
    } finally {
      await client.close();
    }
  });

  it("ids sharing their first 40 characters get distinct names in one pass: 20,000 of them had taken n²/2 tries on every MCP request", () => {
    const ids = Array.from({ length: 20_000 }, (_, i) => `${"x".repeat(40)}${i.toString(36).padStart(4, "0")}`);
    const names = toolNames([...ids, `${"x".repeat(37)}_20001`]);
    expect(new Set(names.values()).size).toBe(ids.length + 1);
    for (const name of names.values()) expect(name).toMatch(/^[a-z0-9_]{1,40}$/);
    expect([names.get(ids[0] ?? ""), names.get(ids[1] ?? ""), names.get(ids[19_999] ?? "")]).toEqual(["x".repeat(40), `${"x".repeat(38)}_2`, `${"x".repeat(34)}_20000`]);
  });

  it("an app declares at most 256 operations: each describe and MCP request lays out every one", async () => {
    const routes = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `op${i}: {}`).join(", ")} }`;
    expect(expectError(await create("many-ops", routes(MAX_OPERATIONS + 1)), 400, "invalid_routes_shape").message).toBe(`manifest.routes declares ${MAX_OPERATIONS + 1} operations; an app declares at most ${MAX_OPERATIONS}`);
    expect((await create("many-ops", routes(MAX_OPERATIONS))).status).toBe(201);
  });

  it("a number JSON cannot hold (1e999, -1e999) is refused at write, not stored as null", async () => {
    for (const n of ["1e999", "-1e999"]) {
      const refused = await create("inf", `{ n: { access: "read", input: { type: "object", properties: { n: { type: "number", maximum: ${n} } } } } }`);
      expect(expectError(refused, 400, "invalid_manifest_schema").message).toContain("manifest.routes.n.input.properties.n.maximum");
    }
  });
});
