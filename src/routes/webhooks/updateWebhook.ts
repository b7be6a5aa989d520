import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { WEBHOOK_NAME_MAX } from "../../domain/webhooks/webhooks.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { WebhookId, WebhookSchema } from "./schemas.ts";

export default function updateWebhook(app: App, ctx: Services): void {
  app.patch(
    "/api/v1/webhooks/:id",
    {
      schema: {
        tags: ["webhooks"],
        summary: "Rename, disable or enable a webhook, or rotate its secret (the old one stops on this request)",
        security: security.user,
        params: WebhookId,
        body: Type.Object(
          {
            rename: Type.Optional(Type.String({ minLength: 1, maxLength: WEBHOOK_NAME_MAX })),
            enabled: Type.Optional(Type.Boolean()),
            rotate_secret: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 200: ok({ webhook: WebhookSchema }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, webhook: await ctx.webhooks.update(user.userId, request.params.id, request.body) };
    },
  );
}
