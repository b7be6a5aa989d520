import type { FastifyInstance } from "fastify";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { answerMcp, mcpBodyErrors, mcpCaller, refuseSessionMethods } from "./http.ts";
import { lazyHandler } from "./sdk.ts";
import { lazyBindings, mcpServerFactory } from "./server.ts";

/**
 * `POST /mcp` (DECISIONS §11): MCP over Streamable HTTP with the official SDK, stateless,
 * serving the current protocol revision and the 2025 `initialize` handshake.
 */
export default function mcpRoutes(app: App, ctx: Services): void {
  const root = app as unknown as FastifyInstance;
  const handler = lazyHandler((sdk) =>
    sdk.createMcpHandler(mcpServerFactory(sdk, root, ctx, lazyBindings(root)), {
      legacy: "stateless",
      responseMode: "auto",
      onerror: (error) => ctx.log.debug({ err: error }, "mcp request refused"),
    }),
  );
  app.post(
    "/mcp",
    {
      schema: { tags: ["agents"], summary: "MCP (Streamable HTTP): tools that are twins of the REST routes; ?tools=all for the full set", security: [{}, { userToken: [] }, { appToken: [] }] },
      errorHandler: mcpBodyErrors,
    },
    async (request, reply) => {
      const caller = await mcpCaller(ctx, request);
      const all = new URL(request.url, "http://x").searchParams.get("tools") === "all";
      return answerMcp(await handler(), ctx, request, reply, { caller: { ...caller, all } });
    },
  );
  refuseSessionMethods(app, "/mcp");

  // DECISIONS §11: the tools that need no account, at a URL of their own, whatever the request
  // carries: an agent with no account creates apps and pairs here.
  app.post(
    "/mcp/anonymous",
    {
      schema: { tags: ["agents"], summary: "MCP (Streamable HTTP) for agents without an account: create_app, pairing, get_setup", security: [{}] },
      errorHandler: mcpBodyErrors,
    },
    async (request, reply) => {
      const caller = await mcpCaller(ctx, request, { anonymous: true });
      return answerMcp(await handler(), ctx, request, reply, { caller: { ...caller, all: false } });
    },
  );
  refuseSessionMethods(app, "/mcp/anonymous");
}
