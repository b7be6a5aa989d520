import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { uuidUrl } from "../../domain/apps/urls.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { shareConfirmPage, shareSignInPage } from "../../web/pages/share-link.ts";
import { viewerAudit, viewerOf } from "./viewer.ts";

const Params = Type.Object({ token: Type.String({ maxLength: 100 }) });

/**
 * `GET /share/{token}` shows what a link gives and asks; only the form's POST grants it, so an
 * image or a prefetch of the URL cannot put an app in someone's list behind their back.
 */
export default function shareLinkPage(app: App, ctx: Services): void {
  app.get("/share/:token", { schema: { tags: ["pages"], summary: "A share link's page (HTML): sign in, then open the app", params: Params } }, async (request, reply) => {
    const path = `/share/${encodeURIComponent(request.params.token)}`;
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) return sendPage(reply, shareSignInPage(path));
    const link = await ctx.shareLinks.peek(request.params.token);
    // DECISIONS §12: the app's own domain, when it is served at one.
    const customDomain = await ctx.domains.servedHostname(link.appId);
    return sendPage(reply, shareConfirmPage({ handle: viewer.handle, path, displayName: link.displayName, role: link.role, customDomain }));
  });

  app.post(
    "/share/:token",
    { schema: { tags: ["pages"], summary: "The share link page's form: take the link's role and go to the app", params: Params } },
    async (request, reply) => {
      const viewer = await viewerOf(ctx, request);
      if (viewer === null) throw apiError("sign_in_required", "sign in to open a shared app");
      const { appId } = await ctx.shareLinks.open(request.params.token, viewer.userId, viewerAudit(request, viewer));
      return reply.redirect(uuidUrl(ctx.config.baseUrl, appId), 303);
    },
  );
}
