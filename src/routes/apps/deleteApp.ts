import type { Services } from "../../services.ts";
import { auditContext } from "../../http/audit.ts";
import { principalOf } from "../../http/auth.ts";
import { OkOnly, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "./schemas.ts";

export default function deleteApp(app: App, ctx: Services): void {
  app.delete(
    "/app/:id",
    {
      schema: {
        tags: ["apps"],
        summary: "Delete an app with its data, versions, tokens and everything else it owns (owner)",
        security: security.user,
        params: AppIdParams,
        response: { 200: OkOnly },
      },
    },
    async (request) => {
      const principal = await principalOf(ctx, request);
      await ctx.apps.delete(request.params.id, principal, auditContext(request, principal));
      return { ok: true as const };
    },
  );
}
