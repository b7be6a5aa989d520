import type { AppContext } from "../../context.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { principalOf } from "../../http/auth.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { appPlaceholderPage } from "../../web/app-page.ts";
import { AppIdParams } from "./schemas.ts";

export default function getAppPage(app: App, ctx: AppContext): void {
  app.get(
    "/app/:id",
    {
      schema: {
        tags: ["apps"],
        summary: "The app's page; a claimed app redirects (302) to its canonical /@handle/manifestId URL",
        security: security.none,
        params: AppIdParams,
      },
    },
    async (request, reply) => {
      const found = await ctx.apps.find(request.params.id);
      if (found.ownerUserId !== null) {
        // The query (a render token `t`, say) travels with the redirect.
        const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
        return reply.redirect(canonicalUrl(ctx.config.baseUrl, found) + query, 302);
      }
      // Unclaimed: the UUID is the capability, so anyone holding the URL may open it.
      await ctx.apps.load(found.id, await principalOf(ctx, request), "view");
      return reply.type("text/html; charset=utf-8").header("Cache-Control", "no-store").send(appPlaceholderPage(found, ctx.config.baseUrl));
    },
  );
}
