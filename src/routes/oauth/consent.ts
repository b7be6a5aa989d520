import type { FastifyReply, FastifyRequest } from "fastify";
import type Provider from "oidc-provider";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { MCP_SCOPE, isMcpResource } from "../../domain/oauth/index.ts";
import { apiError } from "../../errors/index.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { consentPage } from "../../web/pages/consent.ts";
import { viewerAudit, viewerOf, type Viewer } from "../pages/viewer.ts";

type Details = Awaited<ReturnType<Provider["interactionDetails"]>>;

const Params = Type.Object({ uid: Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$" }) });
const Decision = Type.Object({ decision: Type.Union([Type.Literal("approve"), Type.Literal("deny")]) }, { additionalProperties: false });

/** The interaction the authorization server opened for this browser, or a 400 page saying to start again. */
async function interaction(provider: Provider, request: FastifyRequest, reply: FastifyReply, uid: string): Promise<Details> {
  let details: Details;
  try {
    details = await provider.interactionDetails(request.raw, reply.raw);
  } catch {
    throw apiError("invalid_request", "this sign-in request has expired or was opened in another browser; start connecting again from your client");
  }
  if (details.uid !== uid) throw apiError("invalid_request", "this sign-in request does not match the page; start connecting again from your client");
  return details;
}

/** The person, signed in with a browser session (a token never consents); null sends them to sign in. */
async function sessionViewer(ctx: Services, request: FastifyRequest): Promise<Viewer | null> {
  const principal = await principalOf(ctx, request);
  if (principal?.kind !== "user" || principal.via !== "session") return null;
  return viewerOf(ctx, request);
}

function resourceOf(ctx: Services, details: Details): string {
  const asked = details.params.resource;
  const resource = typeof asked === "string" ? asked : `${ctx.config.baseUrl}/mcp`;
  if (!isMcpResource(ctx.config.baseUrl, resource)) throw apiError("invalid_request", "the client asked for a resource this server does not have");
  return resource;
}

/** Where the answer goes, as the page shows it and as form-action must allow it. */
function redirectTarget(details: Details): { shown: string; source: string } {
  const url = new URL(String(details.params.redirect_uri));
  if (url.protocol === "http:" || url.protocol === "https:") return { shown: url.host, source: url.origin };
  return { shown: `${url.protocol}//${url.host}`, source: url.protocol };
}

/**
 * The consent page of the authorization server (DECISIONS §17), ours: the person signs in with
 * their Brickyard session (or is sent to, and brought back), sees which client asks, where the
 * answer goes and what it may do, and approves or denies. Every authorization comes here: no
 * grant is reused without the person seeing it. A form from another origin is refused by the
 * page scope's Origin rule before this runs.
 */
export default function consentRoutes(app: App, ctx: Services): void {
  app.get("/oauth/consent/:uid", { schema: { tags: ["pages"], summary: "OAuth consent page (HTML)", params: Params } }, async (request, reply) => {
    const provider = await ctx.oauth.provider();
    const details = await interaction(provider, request, reply, request.params.uid);
    const viewer = await sessionViewer(ctx, request);
    if (viewer === null) return reply.redirect(`/sign-in?return_to=${encodeURIComponent(`/oauth/consent/${request.params.uid}`)}`, 303);
    const client = await provider.Client.find(String(details.params.client_id));
    if (client === undefined) throw apiError("invalid_request", "the client is no longer registered; start connecting again from your client");
    const resource = resourceOf(ctx, details);
    const target = redirectTarget(details);
    const appPath = resource.slice(`${ctx.config.baseUrl}/app/`.length);
    const page = consentPage({
      uid: details.uid,
      clientName: client.clientName ?? client.clientId,
      redirectHost: target.shown,
      // A metadata-document client is its document's URL, which the name cannot spoof; a registered one says its own.
      clientUri: client.clientId.startsWith("https://") ? client.clientId : (client.clientUri ?? null),
      handle: viewer.handle,
      appId: resource === `${ctx.config.baseUrl}/mcp` ? null : appPath.slice(0, -"/mcp".length),
    });
    return sendPage(reply, page, 200, { formTargets: [target.source] });
  });

  app.post(
    "/oauth/consent/:uid",
    { schema: { tags: ["pages"], summary: "Approve or deny an OAuth client (form); redirects (303) on to the client", consumes: ["application/x-www-form-urlencoded"], params: Params, body: Decision } },
    async (request, reply) => {
      const provider = await ctx.oauth.provider();
      const details = await interaction(provider, request, reply, request.params.uid);
      const viewer = await sessionViewer(ctx, request);
      if (viewer === null) throw apiError("sign_in_required", "sign in to approve a client");
      if (request.body.decision === "deny") {
        const to = await provider.interactionResult(request.raw, reply.raw, { error: "access_denied", error_description: "the person declined" }, { mergeWithLastSubmission: false });
        return reply.redirect(to, 303);
      }
      const clientId = String(details.params.client_id);
      const client = await provider.Client.find(clientId);
      if (client === undefined) throw apiError("invalid_request", "the client is no longer registered; start connecting again from your client");
      const grant = new provider.Grant({ accountId: viewer.userId, clientId });
      const asked = typeof details.params.scope === "string" ? details.params.scope.split(" ") : [];
      const oidcScopes = asked.filter((scope) => scope === "openid" || scope === "offline_access" || scope === MCP_SCOPE);
      if (oidcScopes.length > 0) grant.addOIDCScope(oidcScopes.join(" "));
      grant.addResourceScope(resourceOf(ctx, details), MCP_SCOPE);
      const grantId = await grant.save();
      await ctx.oauth.grants.approved(grantId, client.clientName ?? clientId, viewerAudit(request, viewer));
      const to = await provider.interactionResult(request.raw, reply.raw, { login: { accountId: viewer.userId }, consent: { grantId } }, { mergeWithLastSubmission: false });
      return reply.redirect(to, 303);
    },
  );
}
