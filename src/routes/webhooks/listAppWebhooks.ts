import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../routines/schemas.ts";
import { WebhookSchema } from "./schemas.ts";

export default function listAppWebhooks(app: App, ctx: Services): void {
  app.get(
    "/api/v1/apps/:appId/webhooks",
    {
      schema: {
        tags: ["webhooks"],
        summary: "The webhooks of one app (app:write)",
        security: security.user,
        params: AppIdParams,
        response: { 200: ok({ webhooks: Type.Array(WebhookSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, webhooks: await ctx.webhooks.listForApp(user.userId, request.params.appId) };
    },
  );
}
