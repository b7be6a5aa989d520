import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { WebhookId, WebhookSchema } from "./schemas.ts";

export default function getWebhook(app: App, ctx: Services): void {
  app.get(
    "/api/v1/webhooks/:id",
    {
      schema: {
        tags: ["webhooks"],
        summary: "One webhook (never its secret); 404 when it is missing or the caller lacks app:write",
        security: security.user,
        params: WebhookId,
        response: { 200: ok({ webhook: WebhookSchema }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, webhook: await ctx.webhooks.get(user.userId, request.params.id) };
    },
  );
}
