import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { principalOf } from "../../http/auth.ts";
import { ok, security, Timestamp } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { authorizeActivity } from "../../domain/diagnostics/index.ts";

const Item = Type.Object({
  id: Type.String({ format: "uuid" }),
  text: Type.String(),
  structuredData: Type.Unknown(),
  email: Type.Union([Type.String(), Type.Null()]),
  revision: Type.Integer({ minimum: 0 }),
  createdAt: Timestamp,
});

export default function listFeedback(app: App, ctx: Services): void {
  app.get(
    "/app/:id/feedback",
    {
      schema: {
        tags: ["web"],
        summary: "Feedback sent from the app's page, newest first; the owner, or the app token while unclaimed",
        security: [{ appToken: [] }, ...security.user],
        params: AppIdParams,
        response: { 200: ok({ feedback: Type.Array(Item) }) },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      // The same readers as activity: the app token (unclaimed) or the owner; render tokens refused.
      // Feedback is read like activity: the app token or the owner, never a page credential.
      await authorizeActivity(await principalOf(ctx, request), record, ctx.apps);
      return { ok: true as const, feedback: await ctx.feedback.list(record.id) };
    },
  );
}
