import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../routines/schemas.ts";
import { ShareRoleSchema } from "./schemas.ts";
import { auditContext } from "../../http/audit.ts";

export default function inviteShare(app: App, ctx: Services): void {
  app.post(
    "/api/v1/apps/:appId/shares",
    {
      schema: {
        tags: ["shares"],
        summary: "Invite a person by handle (pending) or email (invited) to an app in a role; owner only",
        security: security.user,
        params: AppIdParams,
        body: Type.Object(
          { grantee: Type.String({ minLength: 1, maxLength: 254, description: "handle or email of the invitee" }), role: Type.Optional(ShareRoleSchema) },
          { additionalProperties: false },
        ),
        response: { 201: ok({ status: Type.Union([Type.Literal("pending"), Type.Literal("invited")]), shareId: Type.String() }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const { status, shareId } = await ctx.shares.invite(request.params.appId, user, request.body, auditContext(request, user));
      return reply.status(201).send({ ok: true, status, shareId });
    },
  );
}
