import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { OkOnly, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { WebhookId } from "./schemas.ts";

export default function deleteWebhook(app: App, ctx: Services): void {
  app.delete(
    "/api/v1/webhooks/:id",
    {
      schema: {
        tags: ["webhooks"],
        summary: "Delete a webhook; its delivery records age out",
        security: security.user,
        params: WebhookId,
        response: { 200: OkOnly },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      await ctx.webhooks.delete(user.userId, request.params.id);
      return { ok: true as const };
    },
  );
}
