import type { CallToolResult, McpRequestContext, McpServer, StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import type { FastifyInstance } from "fastify";
import type { Services } from "../../services.ts";
import { mcpHint } from "../../domain/agents/setup.ts";
import type { McpCaller } from "./http.ts";
import { bindTools, invoke, lenientArgs, type JsonSchema, type ToolBinding } from "./invoke.ts";
import type { Sdk } from "./sdk.ts";
import { annotationsOf, TOOLS, toolsFor } from "./tools.ts";


export const SERVER_INFO = { name: "brickyard", version: "1.0.0" };

/**
 * Builds the server for one MCP request (stateless: every request gets its own), offering the
 * tools this caller may use. Tool bindings are computed once, from the OpenAPI document.
 */
export function mcpServerFactory(sdk: Sdk, app: FastifyInstance, ctx: Services, bindings: () => Map<string, ToolBinding>): (request: McpRequestContext) => McpServer {
  return (request) => {
    const caller = request.authInfo?.extra?.caller as McpCaller & { all: boolean };
    const server = new sdk.McpServer(SERVER_INFO, {
      instructions:
        "Brickyard hosts small apps: an ES module exporting a literal `manifest` and `default.fetch`, plus an optional UI script. " +
        `Create one with create_app, call its operations with call_operation. The authoring guide: ${ctx.config.baseUrl}/llms.txt`,
    });
    for (const spec of toolsFor(caller.principal !== null, caller.all)) {
      const binding = bindings().get(spec.name);
      if (binding === undefined) continue;
      server.registerTool(spec.name, { description: spec.description, inputSchema: argsSchema(binding.inputSchema), annotations: annotationsOf(spec) }, async (args) =>
        toolResult(await invoke(app, binding, args, caller)),
      );
    }
    const setupHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
    server.registerTool("get_setup", { description: "How to connect an agent to this service: MCP URL, setup page, docs, and how to pair with an account.", inputSchema: argsSchema(), annotations: setupHints }, () =>
      Promise.resolve(toolResult({ status: 200, body: setupOf(ctx.config.baseUrl) })),
    );
    return server;
  };
}

/** The tool bindings, computed once from the OpenAPI document on first use (routes are all registered by then). */
export function lazyBindings(app: FastifyInstance): () => Map<string, ToolBinding> {
  return () => {
    // One set per server, shared by /mcp and the per-app endpoint.
    let bindings = BINDINGS.get(app);
    if (bindings === undefined) {
      bindings = new Map(bindTools(app, TOOLS).map((b) => [b.spec.name, b]));
      BINDINGS.set(app, bindings);
    }
    return bindings;
  };
}

const BINDINGS = new WeakMap<FastifyInstance, Map<string, ToolBinding>>();

/** The setup facts `get_setup` and the setup page give. */
export function setupOf(baseUrl: string) {
  return {
    ok: true,
    mcpUrl: `${baseUrl}/mcp`,
    anonymousMcpUrl: `${baseUrl}/mcp/anonymous`,
    setupUrl: `${baseUrl}/mcp/setup`,
    docs: `${baseUrl}/llms.txt`,
    openapi: `${baseUrl}/.well-known/openapi.json`,
    auth: "Send `Authorization: Bearer <token>` to mcpUrl: a user token (svc_user_…) from pairing or from the setup page, or an app's own token (svc_app_…) from an anonymous create_app. Without an account, anonymousMcpUrl offers create_app and pairing.",
    pairing: "start_pairing gives a user code and URL for a person to approve; poll_pairing then returns a user token.",
    mcpHint: mcpHint(baseUrl),
  };
}

/** A tool's answer: the route's JSON as structured content; a refusal is `isError` with the REST envelope. */
export function toolResult(result: { status: number; body: unknown }): CallToolResult {
  const structured = result.body !== null && typeof result.body === "object" && !Array.isArray(result.body) ? (result.body as Record<string, unknown>) : { value: result.body };
  return {
    content: [{ type: "text", text: JSON.stringify(result.body) }],
    structuredContent: structured,
    ...(result.status >= 400 ? { isError: true } : {}),
  };
}

/** Standard Schema over the route's JSON Schema: lenient here, since the route checks. */
export function argsSchema(schema: JsonSchema = { type: "object", properties: {} }): StandardSchemaWithJSON<Record<string, unknown>> {
  return {
    "~standard": {
      version: 1,
      vendor: "brickyard",
      validate: (value: unknown) => {
        const args = lenientArgs(schema, value);
        return args === null ? { issues: [{ message: "the arguments must be a JSON object" }] } : { value: args };
      },
      jsonSchema: { input: () => schema, output: () => schema },
    },
  };
}
