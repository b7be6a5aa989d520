import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { REVOKE_NOTE } from "../../domain/shares/shares.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { ShareParams } from "./schemas.ts";
import { auditContext } from "../../http/audit.ts";

export default function revokeShare(app: App, ctx: Services): void {
  app.post(
    "/api/v1/apps/:appId/shares/:shareId/revoke",
    {
      schema: {
        tags: ["shares"],
        summary: "Remove a grant or invitation by its share id; idempotent",
        security: security.user,
        params: ShareParams,
        response: { 200: ok({ revoked: Type.Boolean(), note: Type.String() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const revoked = await ctx.shares.revoke(request.params.appId, user, request.params.shareId, auditContext(request, user));
      return { ok: true as const, revoked, note: REVOKE_NOTE };
    },
  );
}
