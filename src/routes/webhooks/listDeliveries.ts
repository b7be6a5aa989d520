import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { DELIVERIES_PAGE_DEFAULT, DELIVERIES_PAGE_MAX } from "../../domain/webhooks/deliveries.ts";
import { apiError } from "../../errors/index.ts";
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
      // The format admits times Date cannot read (a leap second, 23:59:60): NaN would reach the query.
      const at = before === undefined ? undefined : Date.parse(before);
      if (at !== undefined && !Number.isFinite(at)) throw apiError("invalid_request", `before: ${JSON.stringify(before)} is not a time this server can read; send the ts of a record`);
      const deliveries = await ctx.webhooks.deliveries(user.userId, request.params.id, {
        ...(limit === undefined ? {} : { limit }),
        ...(at === undefined ? {} : { before: at }),
      });
      return { ok: true as const, deliveries };
    },
  );
}
