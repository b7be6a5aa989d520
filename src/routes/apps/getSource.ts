import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { revisionEtag } from "../../domain/apps/urls.ts";
import { principalOf } from "../../http/auth.ts";
import { ok } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "./schemas.ts";

export default function getSource(app: App, ctx: Services): void {
  app.get(
    "/app/:id/source",
    {
      schema: {
        tags: ["apps"],
        summary: "The current source, with ETag \"N\" for PATCH /app/{id}/source's If-Match",
        security: [{ appToken: [] }, { userToken: [] }, { session: [] }],
        params: AppIdParams,
        response: {
          200: ok({
            id: Type.String({ format: "uuid" }),
            revision: Type.Integer({ minimum: 0 }),
            module: Type.String(),
            ui: Type.Union([Type.String(), Type.Null()]),
            styles: Type.Union([Type.String(), Type.Null()]),
          }),
        },
      },
    },
    async (request, reply) => {
      const actor = await principalOf(ctx, request);
      const source = await ctx.apps.readSource(request.params.id, actor);
      void reply.header("ETag", revisionEtag(source.revision)).header("Cache-Control", "no-store");
      return { ok: true as const, id: source.app.id, revision: source.revision, module: source.module, ui: source.ui, styles: source.styles };
    },
  );
}
