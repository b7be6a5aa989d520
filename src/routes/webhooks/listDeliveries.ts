import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { DELIVERIES_PAGE_DEFAULT, DELIVERIES_PAGE_MAX } from "../../domain/webhooks/deliveries.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { DeliverySchema, WebhookId } from "./schemas.ts";

export default function listDeliveries(app: App, ctx: Services): void {
  app.get(
    "/api/v1/webhooks/:id/deliveries",
    {
      schema: {
        tags: ["webhooks"],
        summary: "Recorded requests to the delivery URL, newest first",
        security: security.user,
        params: WebhookId,
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DELIVERIES_PAGE_MAX, default: DELIVERIES_PAGE_DEFAULT })),
          before: Type.Optional(Type.String({ format: "date-time", description: "only records older than this (the last ts of a page)" })),
        }),
        response: { 200: ok({ deliveries: Type.Array(DeliverySchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const { limit, before } = request.query;
      const deliveries = await ctx.webhooks.deliveries(user.userId, request.params.id, {
        ...(limit === undefined ? {} : { limit }),
        ...(before === undefined ? {} : { before: Date.parse(before) }),
      });
      return { ok: true as const, deliveries };
    },
  );
}
