import type { McpHttpHandler } from "@modelcontextprotocol/server";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { clientIp, principalOf, type Principal } from "../../http/auth.ts";
import { toApiError } from "../../http/error-handler.ts";
import { isBodyParseError } from "../../http/json-body.ts";
import type { App } from "../../http/types.ts";

/** Who calls an MCP endpoint, from where: what each request's server is built for. */
export interface McpCaller {
  principal: Principal | null;
  authorization?: string;
  ip: string;
}

/**
 * The caller of an MCP request (DECISIONS §11): bearer tokens only (a session cookie never
 * authenticates here), user or app tokens; an `Origin`, when sent, must be ours.
 */
export async function mcpCaller(ctx: Services, request: FastifyRequest, options: { anonymous?: boolean } = {}): Promise<McpCaller> {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== new URL(ctx.config.baseUrl).origin) throw apiError("forbidden", `requests from ${origin} are not accepted here`);
  // /mcp/anonymous: a token sent along is neither checked nor passed to the tools.
  if (options.anonymous === true) return { principal: null, ip: clientIp(request) };
  const authorization = request.headers.authorization;
  // principalOf would fall back to the session cookie when no bearer token is sent.
  const principal = authorization === undefined ? null : await principalOf(ctx, request);
  if (principal !== null && principal.kind === "render") throw apiError("unauthorized", "MCP takes a user token (svc_user_…) or an app token (svc_app_…)");
  return { principal, ...(authorization === undefined ? {} : { authorization }), ip: clientIp(request) };
}

/** Hands the request to the SDK's handler with `extra` for the server factory, and relays its answer. */
export async function answerMcp(handler: McpHttpHandler, ctx: Services, request: FastifyRequest, reply: FastifyReply, extra: Record<string, unknown>) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === "string") headers.set(name, value);
  }
  const response = await handler.fetch(new Request(`${ctx.config.baseUrl}${request.url}`, { method: "POST", headers, body: JSON.stringify(request.body ?? null) }), {
    parsedBody: request.body,
    authInfo: { token: request.headers.authorization ?? "", clientId: "brickyard", scopes: [], extra },
  });
  void reply.status(response.status);
  response.headers.forEach((value, name) => void reply.header(name, value));
  return reply.send(Buffer.from(await response.arrayBuffer()));
}

/**
 * A body an MCP endpoint cannot parse (not JSON, nested too deep) is answered as JSON-RPC says
 * (a parse error, -32700, id null), with the service's envelope in `error.data` so an agent can
 * branch on its kind; every other failure goes on to the service's error handler.
 */
export function mcpBodyErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (!isBodyParseError(error)) throw error;
  const failure = toApiError(error, request);
  // Sent as text: the route's response schemas describe the service's envelope, not JSON-RPC's.
  const body = JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: `Parse error: ${failure.message}`, data: failure.toEnvelope() } });
  void reply.status(failure.status).type("application/json; charset=utf-8").send(body);
}

/** GET and DELETE on a stateless MCP endpoint: 405. */
export function refuseSessionMethods(app: App, url: string): void {
  for (const method of ["GET", "DELETE"] as const) {
    app.route({
      method,
      url,
      schema: { tags: ["agents"], summary: "Not served: this MCP endpoint is stateless (405)" },
      handler: () => {
        throw apiError("method_not_allowed", "this MCP endpoint is stateless: POST only");
      },
    });
  }
}
