import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { templatePage } from "../../web/pages/template.ts";
import { viewerOf } from "./viewer.ts";
import { refuseSuspended } from "../../domain/apps/suspended.ts";

const Params = Type.Object({ appId: Type.String({ maxLength: 100 }) });

/**
 * `GET /templates/{appId}`: a published template's public page. Its form's POST copies the
 * template for the signed-in person (the page scope holds it to the Origin rule) and opens the
 * copy; someone who built from it already is taken to their copy.
 */
export default function templatePageRoutes(app: App, ctx: Services): void {
  app.get("/templates/:appId", { schema: { tags: ["pages"], summary: "A published template's page (HTML)", params: Params } }, async (request, reply) => {
    refuseSuspended(await ctx.apps.find(request.params.appId));
    const listing = await ctx.templates.publishedListing(request.params.appId);
    if (listing === null) throw apiError("not_found", "this app is not published as a template");
    const viewer = await viewerOf(ctx, request);
    return sendPage(reply, templatePage({ listing, handle: viewer?.handle ?? null, path: `/templates/${request.params.appId}` }));
  });

  app.post(
    "/templates/:appId/use",
    { schema: { tags: ["pages"], summary: "The template page's form: copy it and open the copy", params: Params } },
    async (request, reply) => {
      const viewer = await viewerOf(ctx, request);
      if (viewer === null) throw apiError("sign_in_required", "sign in to use a template");
      try {
        const result = await ctx.copies.copy(request.params.appId, viewer.userId, {});
        // A template with npm imports is built for the copy first; its status says when it is ready.
        if ("deferred" in result) return await reply.redirect(`/builds/${result.deferred.buildId}`, 303);
        return await reply.redirect(canonicalUrl(ctx.config.baseUrl, result.app), 303);
      } catch (error) {
        const existing = error instanceof ApiError && error.kind === "duplicate_remix" ? error.fields.existingAppId : undefined;
        if (existing === undefined) throw error;
        const app = await ctx.apps.find(existing);
        return reply.redirect(canonicalUrl(ctx.config.baseUrl, app), 303);
      }
    },
  );
}
