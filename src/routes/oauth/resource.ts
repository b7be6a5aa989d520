import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { MCP_SCOPE } from "../../domain/oauth/index.ts";

/** What a protected MCP endpoint's 401 points at (RFC 9728 §5.1): where its metadata lives. */
export function resourceMetadataUrl(baseUrl: string, resourcePath: string): string {
  return `${baseUrl}/.well-known/oauth-protected-resource${resourcePath}`;
}

/** The `WWW-Authenticate` of a 401 from an MCP endpoint (DECISIONS §17), which starts a client's sign-in. */
export function bearerChallenge(baseUrl: string, resourcePath: string, error?: "invalid_token"): string {
  const parts = [`resource_metadata="${resourceMetadataUrl(baseUrl, resourcePath)}"`, `scope="${MCP_SCOPE}"`];
  if (error !== undefined) parts.unshift(`error="${error}"`);
  return `Bearer ${parts.join(", ")}`;
}

/**
 * RFC 9728 metadata of the MCP resources: `/mcp` (also at the bare well-known path) and each
 * app's `/app/{id}/mcp`. Every one names this service as its authorization server.
 */
export default function resourceMetadataRoutes(app: App, ctx: Services): void {
  const metadata = (resourcePath: string) => ({
    resource: `${ctx.config.baseUrl}${resourcePath}`,
    authorization_servers: [ctx.config.baseUrl],
    scopes_supported: [MCP_SCOPE],
    bearer_methods_supported: ["header"],
    resource_name: "Brickyard MCP",
    resource_documentation: `${ctx.config.baseUrl}/mcp/setup`,
  });
  const schema = { tags: ["agents"], summary: "OAuth protected resource metadata of /mcp (RFC 9728)", security: [{}] };
  app.get("/.well-known/oauth-protected-resource", { schema }, async (_request, reply) => reply.header("access-control-allow-origin", "*").send(metadata("/mcp")));
  app.get("/.well-known/oauth-protected-resource/mcp", { schema }, async (_request, reply) => reply.header("access-control-allow-origin", "*").send(metadata("/mcp")));
  app.get(
    "/.well-known/oauth-protected-resource/app/:id/mcp",
    { schema: { ...schema, summary: "OAuth protected resource metadata of an app's /app/{id}/mcp (RFC 9728)", params: Type.Object({ id: Type.String({ pattern: "^[A-Za-z0-9_-]{1,100}$" }) }) } },
    async (request, reply) => reply.header("access-control-allow-origin", "*").send(metadata(`/app/${request.params.id}/mcp`)),
  );
}
