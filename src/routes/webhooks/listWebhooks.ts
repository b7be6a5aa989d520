import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { WebhookLimits, WebhookSchema } from "./schemas.ts";

export default function listWebhooks(app: App, ctx: Services): void {
  app.get(
    "/api/v1/webhooks",
    {
      schema: {
        tags: ["webhooks"],
        summary: "Webhooks on every app where the caller has app:write, with the caller's own plan limits",
        security: security.user,
        response: { 200: ok({ webhooks: Type.Array(WebhookSchema), limits: WebhookLimits }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, ...(await ctx.webhooks.listForUser(user.userId)) };
    },
  );
}
