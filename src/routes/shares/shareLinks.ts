import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../routines/schemas.ts";
import { auditContext } from "../../http/audit.ts";

const LinkRoleSchema = Type.Union([Type.Literal("viewer"), Type.Literal("end-user")]);
const LinkSchema = Type.Object({
  id: Type.String(),
  url: Type.Optional(Type.String({ format: "uri", description: "present only in the create response: the token is kept as a hash" })),
  role: LinkRoleSchema,
  createdAt: Type.String({ format: "date-time" }),
});

/** DECISIONS §9 share links: make, list and revoke (owner only), and accept (any signed-in person). */
export default function shareLinks(app: App, ctx: Services): void {
  app.post(
    "/api/v1/apps/:appId/share-links",
    {
      schema: {
        tags: ["shares"],
        summary: "Make a revocable link that gives its role to signed-in people who open it; the URL is shown once",
        security: security.user,
        params: AppIdParams,
        body: Type.Object({ role: LinkRoleSchema }, { additionalProperties: false }),
        response: { 201: ok({ link: LinkSchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const link = await ctx.shareLinks.create(request.params.appId, user, request.body.role, auditContext(request, user));
      return reply.status(201).send({ ok: true, link: { ...link, createdAt: iso(link.createdAt) } });
    },
  );

  app.get(
    "/api/v1/apps/:appId/share-links",
    {
      schema: {
        tags: ["shares"],
        summary: "The app's live share links, newest first (without their URLs)",
        security: security.user,
        params: AppIdParams,
        response: { 200: ok({ links: Type.Array(LinkSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const links = await ctx.shareLinks.list(request.params.appId, user);
      return { ok: true as const, links: links.map((l) => ({ ...l, createdAt: iso(l.createdAt) })) };
    },
  );

  app.delete(
    "/api/v1/apps/:appId/share-links/:linkId",
    {
      schema: {
        tags: ["shares"],
        summary: "Revoke a share link and the access it gave; idempotent",
        security: security.user,
        params: Type.Object({ appId: Type.String({ maxLength: 100 }), linkId: Type.String({ maxLength: 100 }) }),
        response: { 200: ok({ revoked: Type.Boolean() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, revoked: await ctx.shareLinks.revoke(request.params.appId, user, request.params.linkId, auditContext(request, user)) };
    },
  );

  app.post(
    "/api/v1/share-links/accept",
    {
      schema: {
        tags: ["shares"],
        summary: "Take the role a share link gives, as the signed-in caller",
        security: security.user,
        body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 200: ok({ appId: Type.String(), role: Type.String() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const { appId, role } = await ctx.shareLinks.open(request.body.token, user.userId, auditContext(request, user));
      return { ok: true as const, appId, role };
    },
  );
}
