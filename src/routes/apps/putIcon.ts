import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { principalOf } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams, IconSchema } from "./schemas.ts";

export default function putIcon(app: App, ctx: Services): void {
  app.put(
    "/app/:id/icon",
    {
      schema: {
        tags: ["apps"],
        summary: "Set the app's icon (overrides the manifest's), or null to go back to it (owner)",
        security: security.user,
        params: AppIdParams,
        body: Type.Union([IconSchema, Type.Null()]),
        response: { 200: ok({ icon: Type.Union([IconSchema, Type.Null()]), iconUrl: Type.String({ format: "uri" }) }) },
      },
    },
    async (request) => {
      const updated = await ctx.apps.setIcon(request.params.id, await principalOf(ctx, request), request.body);
      return { ok: true as const, icon: updated.icon, iconUrl: `${ctx.config.baseUrl}/app/${updated.id}/icon.svg` };
    },
  );
}
