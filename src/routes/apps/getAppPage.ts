import type { Services } from "../../services.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { ApiError } from "../../errors/index.ts";
import { security } from "../../http/schemas.ts";
import { customHostOf } from "../../http/custom-hosts.ts";
import type { App } from "../../http/types.ts";
import { pageAccess, serveShell } from "../app-page/shell.ts";
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
      // A malformed id is still 400 invalid_id.
      const found = await ctx.apps.find(request.params.id).catch((error: unknown) => {
        if (error instanceof ApiError && error.kind === "app_not_found") return null;
        throw error;
      });
      // No app here: refused as a private one is, so the answer does not say which.
      if (found === null) return serveShell(ctx, request, reply, null);
      // On its custom domain the page is served where it was asked for (DECISIONS §12).
      // Only for who may open it: the address names the owner and the manifest id, which a
      // private app's page tells no one else (the shell refuses as it does at any address).
      if (found.ownerUserId !== null && customHostOf(request) === null && (await pageAccess(ctx, request, found)).allowed) {
        // The query (a render token `t`, say) travels with the redirect.
        const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
        return reply.redirect(canonicalUrl(ctx.config.baseUrl, found) + query, 302);
      }
      // Unclaimed: the UUID is the capability, so anyone holding the URL may open it.
      return serveShell(ctx, request, reply, found);
    },
  );
}
