import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { principalOf } from "../../http/auth.ts";
import { ok } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { describeView } from "./views.ts";
import { AppIdParams, IconSchema } from "./schemas.ts";

const Operation = Type.Object({
  id: Type.String(),
  title: Type.Union([Type.String(), Type.Null()]),
  description: Type.Union([Type.String(), Type.Null()]),
  access: Type.String({ enum: ["read", "write"] }),
  input: Type.Union([Type.Unknown(), Type.Null()]),
  output: Type.Union([Type.Unknown(), Type.Null()]),
});

export default function describeApp(app: App, ctx: Services): void {
  app.get(
    "/app/:id/describe",
    {
      schema: {
        tags: ["apps"],
        summary: "What the app is and which operations it offers, with their schemas",
        security: [{}, { appToken: [] }, { userToken: [] }, { session: [] }],
        params: AppIdParams,
        response: {
          200: ok({
            id: Type.String({ format: "uuid" }),
            manifestId: Type.String(),
            name: Type.String(),
            description: Type.Union([Type.String(), Type.Null()]),
            icon: Type.Union([IconSchema, Type.Null()]),
            iconUrl: Type.String({ format: "uri" }),
            url: Type.String({ format: "uri" }),
            revision: Type.Integer({ minimum: 0 }),
            role: Type.String(),
            operations: Type.Array(Operation),
          }),
        },
      },
    },
    async (request) => {
      const { app: a, role } = await ctx.apps.load(request.params.id, await principalOf(ctx, request), "view");
      return describeView(ctx.config.baseUrl, a, role);
    },
  );
}
