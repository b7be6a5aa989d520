import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../routines/schemas.ts";
import { auditContext } from "../../http/audit.ts";

export default function acceptShare(app: App, ctx: Services): void {
  app.post(
    "/api/v1/apps/:appId/shares/accept",
    {
      schema: {
        tags: ["shares"],
        summary: "Accept the invitation to this app addressed to the caller; a repeat says alreadyAccepted",
        security: security.user,
        params: AppIdParams,
        response: { 200: ok({ alreadyAccepted: Type.Optional(Type.Literal(true)) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const { alreadyAccepted } = await ctx.shares.accept(request.params.appId, user.userId, auditContext(request, user));
      return alreadyAccepted ? { ok: true as const, alreadyAccepted: true as const } : { ok: true as const };
    },
  );
}
