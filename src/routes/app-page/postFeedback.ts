import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { FEEDBACK_WIRE_MAX_BYTES } from "../../domain/app-page/feedback.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { requireReporter } from "./credentials.ts";
import { reportLimits } from "./reportLimits.ts";

export default function postFeedback(app: App, ctx: Services): void {
  app.post(
    "/app/:id/feedback",
    {
      bodyLimit: FEEDBACK_WIRE_MAX_BYTES,
      onRequest: reportLimits(ctx, "feedback"),
      schema: {
        tags: ["web"],
        summary: "Send feedback to the app's owner (text at most 16 KiB, structuredData at most 64 KiB serialized)",
        security: [{ renderToken: [] }, { appToken: [] }, { userToken: [] }, { session: [] }],
        params: AppIdParams,
        body: Type.Object(
          {
            text: Type.String({ minLength: 1 }),
            structuredData: Type.Optional(Type.Unknown()),
            email: Type.Optional(Type.String({ format: "email", maxLength: 254 })),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ ok: Type.Literal(true), id: Type.String({ format: "uuid" }) }) },
      },
    },
    async (request, reply) => {
      const record = await ctx.apps.find(request.params.id);
      const { userId } = await requireReporter(ctx, await principalWithQueryToken(ctx, request), record);
      const id = await ctx.feedback.add(record, userId, request.body);
      return reply.status(201).send({ ok: true as const, id });
    },
  );
}
