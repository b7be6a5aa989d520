import type { Services } from "../../services.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { security } from "../../http/schemas.ts";
import { customHostOf } from "../../http/custom-hosts.ts";
import type { App } from "../../http/types.ts";
import { serveShell } from "../app-page/shell.ts";
import { AppIdParams } from "./schemas.ts";

export default function getAppPage(app: App, ctx: Services): void {
  app.get(
    "/app/:id",
    {
      schema: {
        tags: ["apps"],
        summary: "The app's page (HTML shell with the sandboxed frame); a claimed app redirects (302) to its canonical /@handle/manifestId URL",
        security: [...security.none, { queryRenderToken: [] }],
        params: AppIdParams,
      },
    },
    async (request, reply) => {
      const found = await ctx.apps.find(request.params.id);
      // On its custom domain the page is served where it was asked for (DECISIONS §12).
      if (found.ownerUserId !== null && customHostOf(request) === null) {
        // The query (a render token `t`, say) travels with the redirect.
        const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
        return reply.redirect(canonicalUrl(ctx.config.baseUrl, found) + query, 302);
      }
      // Unclaimed: the UUID is the capability, so anyone holding the URL may open it.
      return serveShell(ctx, request, reply, found);
    },
  );
}
