import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { OkOnly, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { auditContext } from "../../http/audit.ts";

export default function deleteToken(app: App, ctx: Services): void {
  app.delete(
    "/api/token/:id",
    {
      schema: {
        tags: ["tokens"],
        summary: "Revoke one of the caller's user tokens; effective on the next request",
        security: security.user,
        params: Type.Object({ id: Type.String({ format: "uuid" }) }),
        response: { 200: OkOnly },
      },
    },
    async (request) => {
      const principal = await requireUser(ctx, request);
      await ctx.tokens.revokeUserToken(principal.userId, request.params.id, auditContext(request, principal));
      return { ok: true as const };
    },
  );
}
