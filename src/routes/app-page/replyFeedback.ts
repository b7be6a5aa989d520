import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { authorizeActivity } from "../../domain/diagnostics/index.ts";
import { apiError } from "../../errors/index.ts";
import { principalOf } from "../../http/auth.ts";
import { OkOnly, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";

/**
 * `POST /app/{id}/feedback/{feedbackId}/reply`: the owner answers feedback by mail (the console's
 * reply form does the same). The owner's user credential only: a reply is signed with their handle.
 */
export default function replyFeedback(app: App, ctx: Services): void {
  app.post(
    "/app/:id/feedback/:feedbackId/reply",
    {
      schema: {
        tags: ["web"],
        summary: "Reply to feedback by mail, to the address it left or its signed-in sender (the owner only)",
        security: security.user,
        params: Type.Object({ id: Type.String({ maxLength: 100 }), feedbackId: Type.String({ maxLength: 100 }) }),
        body: Type.Object({ text: Type.String({ minLength: 1, maxLength: 20_000 }) }, { additionalProperties: false }),
        response: { 200: OkOnly },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      const principal = await principalOf(ctx, request);
      await authorizeActivity(principal, record, ctx.apps);
      if (principal?.kind !== "user") throw apiError("forbidden", "a reply is signed by a person: send the owner's user token");
      const owner = await ctx.users.byId(principal.userId);
      await ctx.feedbackReplies.reply(record, request.params.feedbackId, request.body.text, owner?.handle ?? "the owner");
      return { ok: true as const };
    },
  );
}
