import { createMcpHandler } from "@modelcontextprotocol/server";
import type { FastifyInstance } from "fastify";
import type { AppContext } from "../../context.ts";
import { apiError } from "../../errors/index.ts";
import { clientIp, principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { mcpServerFactory, type McpCaller } from "./server.ts";

/**
 * `POST /mcp` (DECISIONS §11): MCP over Streamable HTTP with the official SDK, stateless,
 * serving the current protocol revision and the 2025 `initialize` handshake. Bearer tokens only
 * (a cookie never authenticates here), user or app tokens; an `Origin` must be ours.
 */
export default function mcpRoutes(app: App, ctx: AppContext): void {
  const root = app as unknown as FastifyInstance;
  const handler = createMcpHandler(mcpServerFactory(root, ctx), {
    legacy: "stateless",
    responseMode: "json",
    onerror: (error) => ctx.log.debug({ err: error }, "mcp request refused"),
  });

  app.post(
    "/mcp",
    {
      schema: {
        tags: ["agents"],
        summary: "MCP (Streamable HTTP): tools that are twins of the REST routes; ?tools=all for the full set",
        security: [{}, { userToken: [] }, { appToken: [] }],
        hide: false,
      },
    },
    async (request, reply) => {
      const origin = request.headers.origin;
      if (origin !== undefined && origin !== new URL(ctx.config.baseUrl).origin) throw apiError("forbidden", `requests from ${origin} are not accepted here`);
      const authorization = request.headers.authorization;
      // Bearer only: principalOf would fall back to a session cookie, which MCP never honours.
      const principal = authorization === undefined ? null : await principalOf(ctx, request);
      if (principal !== null && principal.kind === "render") throw apiError("unauthorized", "MCP takes a user token (svc_user_…) or an app token (svc_app_…)");
      const caller: McpCaller = {
        principal,
        ...(authorization === undefined ? {} : { authorization }),
        ip: clientIp(request),
        all: new URL(request.url, "http://x").searchParams.get("tools") === "all",
      };
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers)) {
        if (typeof value === "string") headers.set(name, value);
      }
      const body = JSON.stringify(request.body ?? null);
      const response = await handler.fetch(new Request(`${ctx.config.baseUrl}${request.url}`, { method: "POST", headers, body }), {
        parsedBody: request.body,
        authInfo: { token: authorization ?? "", clientId: principal?.kind ?? "anonymous", scopes: [], extra: { caller } },
      });
      void reply.status(response.status);
      response.headers.forEach((value, name) => void reply.header(name, value));
      return reply.send(Buffer.from(await response.arrayBuffer()));
    },
  );
  for (const method of ["GET", "DELETE"] as const) {
    app.route({
      method,
      url: "/mcp",
      schema: { tags: ["agents"], summary: "Not served: this MCP endpoint is stateless (405)" },
      handler: () => {
        throw apiError("method_not_allowed", "this MCP endpoint is stateless: POST only");
      },
    });
  }
}
