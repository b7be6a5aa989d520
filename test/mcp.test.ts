import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeUser, manifestOf, type FixtureUser } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

interface ToolClient {
  listTools(): Promise<{ tools: { name: string; inputSchema: unknown }[] }>;
  callTool(request: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read whatever the tool answered
type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; content: { type: string; text?: string }[] };

const MODULE = (greeting: string, id = "mcp-made") => `export const manifest = ${JSON.stringify(
  manifestOf(id, ["hello", "boom"], { capabilities: { imports: ["svc:storage/kv@1.0"] } }),
)};
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    if (op === "boom") { console.log("about to go boom"); throw new Error("boom from the app"); }
    const input = await request.json().catch(() => ({}));
    return Response.json({ ok: true, value: "${greeting}, " + (input.name ?? "nobody") });
  },
};
`;

async function connectV2(url: string, token?: string): Promise<ToolClient> {
  const client = new ClientV2({ name: "test", version: "1.0.0" });
  await client.connect(new TransportV2(new URL(url), { requestInit: { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } } }));
  return client;
}

const clients: Record<string, (url: string, token?: string) => Promise<ToolClient>> = {
  "v2 SDK client (current revision)": (url, token) => connectV2(url, token),
  "v1 SDK client (2025 initialize handshake)": async (url, token) => {
    const client = new ClientV1({ name: "test", version: "1.0.0" });
    await client.connect(new TransportV1(new URL(url), { requestInit: { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } } }));
    return client;
  },
};

describe("MCP: POST /mcp", () => {
  let server: TestServer;
  let user: FixtureUser;
  beforeAll(async () => {
    server = await startServer();
    user = await makeUser(server);
  });
  afterAll(async () => server.close());

  it("/mcp/anonymous: the no-account tools whatever the request carries; create_app there makes an anonymous app", async () => {
    const client = await connectV2(`${server.url}/mcp/anonymous`, user.token);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["create_app", "get_setup", "poll_pairing", "start_pairing"]);
    const made = (await client.callTool({ name: "create_app", arguments: { module: MODULE("hi", "anonymous-made") } })) as ToolResult;
    expect(made.isError, JSON.stringify(made)).toBeFalsy();
    // Made without an account, although a user token came along: it carries its own token.
    expect(made.structuredContent?.token).toMatch(/^svc_app_/);
    const setup = (await client.callTool({ name: "get_setup", arguments: {} })) as ToolResult;
    expect(setup.structuredContent).toMatchObject({ mcpUrl: `${server.config.baseUrl}/mcp`, anonymousMcpUrl: `${server.config.baseUrl}/mcp/anonymous` });
    await client.close();
  });

  for (const [index, [label, connect]] of Object.entries(clients).entries()) {
    describe(label, () => {
      it("lists at most 20 well-named tools; /mcp/anonymous only the anonymous four", async () => {
        const anonymous = await connect(`${server.url}/mcp/anonymous`);
        expect((await anonymous.listTools()).tools.map((t) => t.name).sort()).toEqual(["create_app", "get_setup", "poll_pairing", "start_pairing"]);
        await anonymous.close();
        const client = await connect(`${server.url}/mcp`, user.token);
        const tools = (await client.listTools()).tools;
        expect(tools.length).toBeLessThanOrEqual(20);
        for (const tool of tools) expect(tool.name).toMatch(/^[a-z0-9_]{1,40}$/);
        expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["create_app", "edit_source", "call_operation", "get_diagnostics", "get_logs", "create_webhook", "update_webhook"]));
        // A tool call cannot hold a stream open: get_logs offers no follow.
        expect(Object.keys((tools.find((t) => t.name === "get_logs")?.inputSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {}).sort()).toEqual(["id", "level", "limit", "op", "since"]);
        // Every tool says whether it only reads, may destroy, may be repeated, reaches outside.
        for (const tool of tools) expect(Object.keys((tool as { annotations?: object }).annotations ?? {}).sort(), tool.name).toEqual(["destructiveHint", "idempotentHint", "openWorldHint", "readOnlyHint"]);
        const hints = (name: string) => (tools.find((t) => t.name === name) as { annotations?: Record<string, boolean> } | undefined)?.annotations;
        expect(hints("get_source")).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
        expect(hints("update_app")).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
        expect(hints("call_operation")).toMatchObject({ readOnlyHint: false, openWorldHint: true });
        // The input schema is the route's own: create_app takes module, ui, styles.
        expect(tools.find((t) => t.name === "create_app")?.inputSchema).toMatchObject({ type: "object", properties: { module: { type: "string" } }, required: ["module"] });
        await client.close();
        const all = await connect(`${server.url}/mcp?tools=all`, user.token);
        const everything = (await all.listTools()).tools as { name: string; annotations?: Record<string, boolean> }[];
        expect(everything.map((t) => t.name)).toEqual(expect.arrayContaining(["copy_app", "restore_version", "delete_app", "delete_webhook", "list_deliveries", "add_domain", "list_domains"]));
        expect(everything.find((t) => t.name === "list_domains")?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
        expect(everything.find((t) => t.name === "delete_app")?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
        await all.close();
      });

      it("works as an agent would: create, edit, call, read diagnostics, webhook with a rotated secret", async () => {
        const client = await connect(`${server.url}/mcp`, user.token);
        const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolResult;
        const created = await call("create_app", { module: MODULE("hello", `mcp-made-${index}`) });
        expect(created.isError, JSON.stringify(created)).toBeFalsy();
        const id = created.structuredContent?.id as string;
        expect(created.structuredContent).toMatchObject({ ok: true, manifestId: `mcp-made-${index}`, revision: 1 });
        const source = await call("get_source", { id });
        expect(source.structuredContent?.revision).toBe(1);
        const edited = await call("edit_source", { id, expected_revision: 1, edits: [{ bucket: "module", old_string: '"hello, "', new_string: '"howdy, "' }] });
        expect(edited.structuredContent, JSON.stringify(edited)).toMatchObject({ ok: true, revision: 2 });
        // An object sent as JSON text is taken as the object.
        const ran = await call("call_operation", { id, operation: "hello", input: JSON.stringify({ name: "ada" }) });
        expect(ran.structuredContent).toEqual({ ok: true, value: "howdy, ada" });
        // ...but no deeper than a body may nest: text nested 100,000 deep is left as text, never
        // parsed (it had cost ~96 MB of heap and a stack overflow), and refused for its type.
        const deep = "[".repeat(100_000) + "]".repeat(100_000);
        const nested = await call("call_operation", { id, operation: "hello", input: deep });
        expect(nested.isError).toBe(true);
        expect(nested.structuredContent).toMatchObject({ ok: false, error: { kind: "invalid_input" } });
        const boom = await call("call_operation", { id, operation: "boom", input: {} });
        expect(boom.isError).toBe(true);
        const diag = await call("get_diagnostics", { id });
        expect(JSON.stringify(diag.structuredContent)).toContain("boom from the app");
        // What the app printed before it threw: the line, its op and level.
        const logs = await call("get_logs", { id, op: "boom", limit: 5 });
        expect(logs.structuredContent).toMatchObject({ ok: true, lines: [{ op: "boom", level: "info", message: "about to go boom" }] });
        const hook = await call("create_webhook", { appId: id, op: "hello", name: "incoming" });
        expect(hook.isError, JSON.stringify(hook)).toBeFalsy();
        const hookId = (hook.structuredContent?.webhook?.id ?? hook.structuredContent?.id) as string;
        const firstSecret = JSON.stringify(hook.structuredContent).match(/whsec_[A-Za-z0-9_-]+|"secret":"([^"]+)"/)?.[0];
        expect(firstSecret).toBeDefined();
        const rotated = await call("update_webhook", { id: hookId, rotate_secret: true });
        expect(rotated.isError, JSON.stringify(rotated)).toBeFalsy();
        expect(JSON.stringify(rotated.structuredContent)).not.toContain(firstSecret);
        await client.close();
      });

      it("a refusal is isError with the REST envelope: the same kind and recovery", async () => {
        const client = await connect(`${server.url}/mcp`, user.token);
        const bad = (await client.callTool({ name: "get_source", arguments: { id: "not-a-uuid" } })) as ToolResult;
        expect(bad.isError).toBe(true);
        expect(bad.structuredContent).toMatchObject({ ok: false, error: { kind: "invalid_id" } });
        const missing = (await client.callTool({ name: "create_app", arguments: { module: "export default {}" } })) as ToolResult;
        expect(missing.structuredContent).toMatchObject({ ok: false, error: { kind: "invalid_module" } });
        await client.close();
      });
    });
  }

  it("HTTP: a bad token is 401, a foreign Origin 403, GET and DELETE 405; a cookie alone does not authenticate", async () => {
    const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
    const post = (headers: Record<string, string>) =>
      fetch(`${server.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(init) });
    const unauthorized = await post({ authorization: "Bearer svc_user_nope" });
    expect(unauthorized.status).toBe(401);
    expect(((await unauthorized.json()) as { error: { kind: string } }).error.kind).toBe("unauthorized");
    const foreign = await post({ authorization: `Bearer ${user.token}`, origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { kind: string } }).error.kind).toBe("forbidden");
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${server.url}/mcp`, { method, headers: { authorization: `Bearer ${user.token}` } });
      expect(res.status).toBe(405);
      expect(((await res.json()) as { error: { kind: string } }).error.kind).toBe("method_not_allowed");
    }
    // A session cookie is not a token: 401 with the challenge that starts a client's sign-in (DECISIONS §17).
    const list = await fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", cookie: user.cookie },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }),
    });
    expect(list.status).toBe(401);
    expect(((await list.json()) as { error: { kind: string } }).error.kind).toBe("sign_in_required");
    expect(list.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${server.config.baseUrl}/.well-known/oauth-protected-resource/mcp", scope="mcp"`);
    expect(unauthorized.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("100 rapid call_operation calls never meet rate_limited", async () => {
    const client = await connectV2(`${server.url}/mcp`, user.token);
    const created = (await client.callTool({ name: "create_app", arguments: { module: MODULE("fast", "mcp-fast") } })) as ToolResult;
    const id = created.structuredContent?.id as string;
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => client.callTool({ name: "call_operation", arguments: { id, operation: "hello", input: { name: `n${i}` } } }) as Promise<ToolResult>),
    );
    const refused = results.filter((r) => r.isError === true);
    expect(refused.map((r) => r.structuredContent?.error?.kind)).toEqual([]);
    await client.close();
  });

  it("calls that find every run slot of the app taken wait for one instead of failing app_busy", async () => {
    // 20 calls of a 300 ms op at once against a free plan's 8 concurrent runs: over HTTP twelve
    // would be refused; through the tool layer each waits its turn.
    const slow = `export const manifest = ${JSON.stringify(manifestOf("mcp-slow", ["nap"]))};
export default { async fetch() { await new Promise((resolve) => setTimeout(resolve, 300)); return Response.json({ ok: true, value: "rested" }); } };`;
    const client = await connectV2(`${server.url}/mcp`, user.token);
    const created = (await client.callTool({ name: "create_app", arguments: { module: slow } })) as ToolResult;
    const id = created.structuredContent?.id as string;
    const overHttp = await Promise.all(Array.from({ length: 20 }, () => server.client.post(`/app/${id}/api/nap`, {}, { token: user.token })));
    expect(overHttp.filter((res) => res.status === 429 && res.body.error.kind === "app_busy").length).toBeGreaterThan(0);
    const results = await Promise.all(Array.from({ length: 20 }, () => client.callTool({ name: "call_operation", arguments: { id, operation: "nap", input: {} } }) as Promise<ToolResult>));
    expect(results.map((r) => r.structuredContent?.value ?? r.structuredContent?.error?.kind)).toEqual(Array(20).fill("rested"));
    await client.close();
  });

  it("reaches the app as x-svc-trigger: agent; a request over HTTP as http", async () => {
    const echo = `export const manifest = ${JSON.stringify(manifestOf("mcp-trigger", ["trigger"]))};
export default { async fetch(request) { return Response.json({ ok: true, value: request.headers.get("x-svc-trigger") }); } };`;
    const client = await connectV2(`${server.url}/mcp`, user.token);
    const created = (await client.callTool({ name: "create_app", arguments: { module: echo } })) as ToolResult;
    const id = created.structuredContent?.id as string;
    const viaTool = (await client.callTool({ name: "call_operation", arguments: { id, operation: "trigger", input: {} } })) as ToolResult;
    expect(viaTool.structuredContent?.value).toBe("agent");
    expect((await server.client.post(`/app/${id}/api/trigger`, {}, { token: user.token })).body).toEqual({ ok: true, value: "http" });
    await client.close();
  });
});

