import { iso } from "../../config/clock.ts";
import type { AppContext } from "../../context.ts";
import { revisionEtag } from "../../domain/apps/urls.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { CreateBody, CreateResponse } from "./schemas.ts";
import { appView } from "./views.ts";

export default function createApp(app: App, ctx: AppContext): void {
  app.post(
    "/app",
    {
      schema: {
        tags: ["apps"],
        summary: "Create an app: anonymous (one-time per-app token, 7-day life) or an upsert by (user, manifest id)",
        security: [{}, { userToken: [] }, { session: [] }],
        body: CreateBody,
        response: { 200: CreateResponse, 201: CreateResponse },
      },
    },
    async (request, reply) => {
      const actor = await principalOf(ctx, request);
      const { module, ui, styles, pair, label } = request.body;
      const result = await ctx.apps.create(actor, { module, ui: ui ?? null, styles: styles ?? null, pair, label });
      const view = appView(ctx.config.baseUrl, result.app, result.warnings);
      void reply.header("ETag", revisionEtag(result.app.revision));
      return reply.status(result.created ? 201 : 200).send({
        ...view,
        ...(result.token === null ? {} : { token: result.token }),
        ...(result.app.expiresAt === null || result.token === null ? {} : { expiresAt: iso(result.app.expiresAt) }),
        ...(result.pairing === null ? {} : { pairing: result.pairing }),
      });
    },
  );
}
