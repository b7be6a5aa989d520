import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { principalOf } from "../../http/auth.ts";
import { NOT_ON_THIS_HOST } from "../../http/custom-hosts.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import openOnDomain from "./openOnDomain.ts";

const Domain = Type.Object({
  id: Type.String(),
  hostname: Type.String(),
  state: Type.Union([Type.Literal("pending"), Type.Literal("verified"), Type.Literal("failing")]),
  verification: Type.Object({ type: Type.Literal("TXT"), name: Type.String(), value: Type.String() }),
  createdAt: Type.String(),
  verifiedAt: Type.Union([Type.String(), Type.Null()]),
});
const AppParams = Type.Object({ appId: Type.String({ maxLength: 100 }) });
const DomainParams = Type.Object({ appId: Type.String({ maxLength: 100 }), domainId: Type.String({ maxLength: 100 }) });
const tags = ["domains"];

/**
 * Custom domains (DECISIONS §12): the owner (or a team's admin) adds a hostname, creates the TXT
 * record it names, verifies; the app is then served at that hostname, TLS by the operator's proxy,
 * which asks `tls-allowed` before it gets a certificate.
 */
export default function domainRoutes(app: App, ctx: Services): void {
  /** The app, if the caller holds the owner's rights over it. */
  const managed = async (request: Parameters<typeof principalOf>[1], appId: string) => {
    const principal = await principalOf(ctx, request);
    if (principal === null) throw apiError("sign_in_required", "sign in, or send a user or app token, to manage an app's domains");
    return (await ctx.apps.load(appId, principal, "manage")).app;
  };

  app.post(
    "/api/v1/apps/:appId/domains",
    {
      schema: {
        tags,
        summary: "Add a custom domain (pro plan and above): pending until the TXT record it names is found",
        security: security.user,
        params: AppParams,
        body: Type.Object({ hostname: Type.String({ minLength: 1, maxLength: 300 }) }, { additionalProperties: false }),
        response: { 201: ok({ domain: Domain }) },
      },
    },
    async (request, reply) => {
      const record = await managed(request, request.params.appId);
      const domain = await ctx.domains.add(record.id, await ctx.runner.planOf(record.ownerUserId), request.body.hostname);
      return reply.status(201).send({ ok: true as const, domain });
    },
  );
  app.get(
    "/api/v1/apps/:appId/domains",
    { schema: { tags, summary: "The app's custom domains and their states", security: security.user, params: AppParams, response: { 200: ok({ domains: Type.Array(Domain) }) } } },
    async (request) => {
      const record = await managed(request, request.params.appId);
      return { ok: true as const, domains: await ctx.domains.list(record.id) };
    },
  );
  app.delete(
    "/api/v1/apps/:appId/domains/:domainId",
    { schema: { tags, summary: "Remove a custom domain: it stops being served at once", security: security.user, params: DomainParams, response: { 200: ok({}) } } },
    async (request) => {
      const record = await managed(request, request.params.appId);
      await ctx.domains.remove(record.id, request.params.domainId);
      return { ok: true as const };
    },
  );
  app.post(
    "/api/v1/apps/:appId/domains/:domainId/verify",
    { schema: { tags, summary: "Look the domain's TXT record up now: its state after", security: security.user, params: DomainParams, response: { 200: ok({ domain: Domain }) } } },
    async (request) => {
      const record = await managed(request, request.params.appId);
      return { ok: true as const, domain: await ctx.domains.verify(record.id, request.params.domainId) };
    },
  );
  app.get(
    "/api/v1/domains/tls-allowed",
    {
      schema: {
        tags,
        summary: "For the TLS proxy (Caddy's on_demand_tls ask): 200 when the hostname is a served custom domain, else 404",
        security: security.none,
        querystring: Type.Object({ domain: Type.String({ minLength: 1, maxLength: 300 }) }),
        response: { 200: ok({}) },
      },
    },
    async (request) => {
      if (!(await ctx.domains.served(request.query.domain))) throw apiError("not_found", "not a served custom domain");
      return { ok: true as const };
    },
  );
  // Where a custom domain's requests for anything but its app land (http/custom-hosts.ts).
  app.all(NOT_ON_THIS_HOST, { schema: { hide: true } }, () => {
    throw apiError("not_found", "not found on this domain");
  });
  openOnDomain(app, ctx);
}
