import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { revisionEtag } from "../../domain/apps/urls.ts";
import { deferredResponse } from "../builds/reply.ts";
import { BuildStatusResponse, IdempotencyHeaders } from "../builds/schemas.ts";
import { idempotent } from "./idempotent.ts";
import { AppIdParams, UpdateBody, UpdateResponse } from "./schemas.ts";
import { appView } from "./views.ts";

export default function updateApp(app: App, ctx: Services): void {
  app.put(
    "/app/:id",
    {
      schema: {
        tags: ["apps"],
        summary: "Replace an app's source (a new revision); the manifest id cannot change",
        security: [{ appToken: [] }, { userToken: [] }, { session: [] }],
        params: AppIdParams,
        headers: Type.Object({
          "if-match": Type.Optional(Type.String({ description: 'optional: write only if the source is still at this revision, e.g. "3"' })),
          ...IdempotencyHeaders.properties,
        }),
        body: UpdateBody,
        response: { 200: UpdateResponse, 202: BuildStatusResponse },
      },
    },
    async (request, reply) => {
      const actor = await principalOf(ctx, request);
      const { module, ui, styles } = request.body;
      return idempotent(ctx, request, reply, actor, async () => {
        const result = await ctx.apps.update(request.params.id, actor, { module, ui: ui ?? null, styles: styles ?? null }, { ifMatch: request.headers["if-match"] });
        if ("deferred" in result) return deferredResponse(ctx, request, result.deferred, actor);
        return { status: 200, etag: revisionEtag(result.app.revision), body: appView(ctx.config.baseUrl, result.app, result.warnings) };
      });
    },
  );
}
