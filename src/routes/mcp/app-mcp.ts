import type { McpRequestContext, McpServer } from "@modelcontextprotocol/server";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { AppRole } from "../../domain/access/access.ts";
import { toolNames, visibleOperations } from "../../domain/access/operations-view.ts";
import type { AppRecord } from "../../domain/apps/queries.ts";
import type { App } from "../../http/types.ts";
import { apiError } from "../../errors/index.ts";
import { answerMcp, mcpBodyErrors, mcpCaller, refuseSessionMethods, type McpCaller } from "./http.ts";
import { invoke, type JsonSchema, type ToolBinding } from "./invoke.ts";
import { lazyHandler, type Sdk } from "./sdk.ts";
import { argsSchema, lazyBindings, SERVER_INFO, toolResult } from "./server.ts";
import { refuseSuspended } from "../../domain/apps/suspended.ts";

interface AppMcpRequest {
  caller: McpCaller;
  app: AppRecord;
  role: AppRole;
}

/**
 * `POST /app/{id}/mcp` (DECISIONS §11): the app's own operations as tools, one each, with the
 * input schemas the app declared, shown as the caller's role may run them (a viewer sees only
 * `read` operations; the app token sees all). Each call is `call_operation` of that operation.
 */
export default function appMcpRoutes(app: App, ctx: Services): void {
  const root = app as unknown as FastifyInstance;
  const bindings = lazyBindings(root);
  const handler = lazyHandler((sdk) =>
    sdk.createMcpHandler(appServerFactory(sdk, root, ctx, bindings), {
      legacy: "stateless",
      responseMode: "auto",
      onerror: (error) => ctx.log.debug({ err: error }, "app mcp request refused"),
    }),
  );
  app.post(
    "/app/:id/mcp",
    {
      schema: {
        tags: ["agents"],
        summary: "MCP (Streamable HTTP) for one app: its operations as tools, as the caller's role may run them",
        security: [{ appToken: [] }, { userToken: [] }],
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
      },
      errorHandler: mcpBodyErrors,
    },
    async (request, reply) => {
      // The id goes into the 401's WWW-Authenticate: nothing but an id's characters may.
      if (!/^[A-Za-z0-9_-]{1,100}$/.test(request.params.id)) throw apiError("not_found", "no such app");
      const caller = await mcpCaller(ctx, request, { resourcePath: `/app/${request.params.id}/mcp` });
      const { app: record, role } = await ctx.apps.load(request.params.id, caller.principal, "view");
      refuseSuspended(record);
      const extra: AppMcpRequest = { caller, app: record, role };
      return answerMcp(await handler(), ctx, request, reply, extra as unknown as Record<string, unknown>);
    },
  );
  refuseSessionMethods(app, "/app/:id/mcp");
}

/** Builds the server for one request to an app's MCP endpoint: that app's operations, as the caller's role may run them. */
/**
 * `{ok: true, value}` with the operation's output schema as `value`'s. Its `$defs` (and
 * `definitions`) move to the root, where its `#/$defs/…` references still find them.
 */
function envelopeSchema(output: JsonSchema): JsonSchema {
  const { $defs, definitions, ...value } = output as JsonSchema & { $defs?: unknown; definitions?: unknown };
  return {
    type: "object",
    properties: { ok: { const: true }, value },
    required: ["ok", "value"],
    ...($defs === undefined ? {} : { $defs }),
    ...(definitions === undefined ? {} : { definitions }),
  };
}

/**
 * A tool's arguments are an object (MCP says so, and the SDK refuses to list any tool whose schema
 * says otherwise, taking every other tool of the app with it); an op's input is an object too.
 * So a declared schema that also allows other types (`["object", "null"]`) is narrowed to its
 * object, and one that allows no object (`"array"`) becomes an open object: the op refuses what
 * it cannot take, with its own error.
 */
function toolInputSchema(input: unknown): JsonSchema {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return { type: "object" };
  const schema = input as JsonSchema & { type?: unknown };
  if (schema.type === undefined || schema.type === "object") return schema;
  if (Array.isArray(schema.type) && schema.type.includes("object")) return { ...schema, type: "object" };
  return { type: "object" };
}

function appServerFactory(sdk: Sdk, root: FastifyInstance, ctx: Services, bindings: () => Map<string, ToolBinding>): (request: McpRequestContext) => McpServer {
  return (request) => {
    const { caller, app: record, role } = request.authInfo?.extra as unknown as AppMcpRequest;
    const operations = visibleOperations(record.manifest, role);
    const server = new sdk.McpServer(SERVER_INFO, {
      instructions: `${record.displayName}${record.manifest.description === null ? "" : `: ${record.manifest.description}`}. Each tool runs one of this app's operations. ${ctx.config.baseUrl}/app/${record.id}/agent.json describes it.`,
    });
    const names = toolNames(operations.map((op) => op.id));
    const call = bindings().get("call_operation");
    if (call === undefined) throw new Error("call_operation has no route");
    // An app that declares origins may reach the outside world from its operations.
    const openWorld = (record.manifest.capabilities?.origins?.length ?? 0) > 0;
    for (const op of operations) {
      const schema = toolInputSchema(op.input);
      const read = op.access === "read";
      server.registerTool(
        names.get(op.id) ?? op.id,
        {
          ...(op.title === null ? {} : { title: op.title }),
          description: op.description ?? op.title ?? `Runs ${op.id} (${op.access})`,
          inputSchema: argsSchema(schema),
          // The result envelope with the operation's declared output as its value: what structuredContent holds.
          ...(op.output === undefined || op.output === null ? {} : { outputSchema: argsSchema(envelopeSchema(op.output as JsonSchema)) }),
          annotations: { readOnlyHint: read, destructiveHint: !read, idempotentHint: read, openWorldHint: openWorld },
        },
        async (args) => toolResult(await invoke(root, call, { id: record.id, operation: op.id, input: args }, caller)),
      );
    }
    return server;
  };
}
