import type { McpHttpHandler } from "@modelcontextprotocol/server";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import { ACCOUNT_SUSPENDED } from "../../domain/tokens/tokens.ts";
import { parseToken } from "../../domain/tokens/format.ts";
import { bearerChallenge } from "../oauth/resource.ts";
import { clientIp, principalOf, type Principal } from "../../http/auth.ts";
import { toApiError } from "../../http/error-handler.ts";
import { isBodyParseError } from "../../http/json-body.ts";
import type { App } from "../../http/types.ts";

/** Who calls an MCP endpoint, from where: what each request's server is built for. */
export interface McpCaller {
  principal: Principal | null;
  /** The caller's own bearer token (ours), which the tools send on to the REST routes they run. */
  authorization?: string;
  ip: string;
}

/** A 401 from an MCP endpoint carries the challenge that starts a client's OAuth sign-in (DECISIONS §17). */
function challenged(ctx: Services, resourcePath: string, failure: ApiError, invalid: boolean): ApiError {
  const challenge = bearerChallenge(ctx.config.baseUrl, resourcePath, invalid ? "invalid_token" : undefined);
  return new ApiError(failure.kind, failure.message, failure.fields, { headers: { ...failure.headers, "www-authenticate": challenge } });
}

/**
 * The caller of an MCP request (DECISIONS §11, §17): a bearer token is required, ours (a user or
 * app token) or an OAuth access token bound to this endpoint; a session cookie never
 * authenticates here. Without one, or with one that is not live, the answer is 401 with the
 * challenge that points a client at the resource metadata. An `Origin`, when sent, must be ours.
 */
export async function mcpCaller(ctx: Services, request: FastifyRequest, options: { anonymous?: boolean; resourcePath?: string } = {}): Promise<McpCaller> {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== new URL(ctx.config.baseUrl).origin) throw apiError("forbidden", `requests from ${origin} are not accepted here`);
  // /mcp/anonymous: a token sent along is neither checked nor passed to the tools.
  if (options.anonymous === true) return { principal: null, ip: clientIp(request) };
  const resourcePath = options.resourcePath ?? "/mcp";
  const authorization = request.headers.authorization;
  if (authorization === undefined) {
    throw challenged(ctx, resourcePath, apiError("sign_in_required", `this MCP endpoint needs a token: sign in through your client (OAuth), or send 'Authorization: Bearer svc_user_…'; agents without an account use ${ctx.config.baseUrl}/mcp/anonymous`), false);
  }
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
  if (bearer !== undefined && parseToken(bearer) === null) return { principal: await oauthPrincipal(ctx, bearer, resourcePath), ip: clientIp(request) };
  let principal: Principal | null;
  try {
    principal = await principalOf(ctx, request);
  } catch (error) {
    throw error instanceof ApiError && error.status === 401 ? challenged(ctx, resourcePath, error, true) : error;
  }
  if (principal !== null && principal.kind === "render") throw apiError("unauthorized", "MCP takes a user token (svc_user_…) or an app token (svc_app_…)");
  return { principal, authorization, ip: clientIp(request) };
}

/** The person an OAuth access token acts for, when it is live, bound to this endpoint and their account stands. */
async function oauthPrincipal(ctx: Services, token: string, resourcePath: string): Promise<Principal> {
  const holder = await ctx.oauth.holder(token, `${ctx.config.baseUrl}${resourcePath}`);
  const invalid = (message: string) => challenged(ctx, resourcePath, apiError("unauthorized", message, { reason: "token_unknown" }), true);
  if (holder === null) throw invalid("the access token is unknown, expired, revoked or for another resource");
  const user = await ctx.users.byId(holder.userId);
  if (user === null) throw invalid("the access token's account no longer exists");
  if (user.suspension !== null) throw challenged(ctx, resourcePath, apiError("unauthorized", ACCOUNT_SUSPENDED), true);
  ctx.oauth.grants.touch(holder.grantId);
  return { kind: "user", userId: holder.userId, via: "oauth", grantId: holder.grantId };
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
