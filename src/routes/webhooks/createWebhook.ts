import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { WEBHOOK_NAME_MAX } from "../../domain/webhooks/webhooks.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../routines/schemas.ts";
import { WebhookSchema } from "./schemas.ts";

export default function createWebhook(app: App, ctx: Services): void {
  app.post(
    "/api/v1/apps/:appId/webhooks",
    {
      schema: {
        tags: ["webhooks"],
        summary: "Give one declared op a delivery URL and a secret (the secret is returned this once)",
        security: security.user,
        params: AppIdParams,
        body: Type.Object(
          { op: Type.String({ minLength: 1, maxLength: 64 }), name: Type.Optional(Type.String({ minLength: 1, maxLength: WEBHOOK_NAME_MAX })) },
          { additionalProperties: false },
        ),
        response: { 201: ok({ webhook: WebhookSchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const webhook = await ctx.webhooks.create(user.userId, request.params.appId, request.body);
      return reply.status(201).send({ ok: true, webhook });
    },
  );
}
