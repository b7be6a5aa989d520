import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { clearClaimCookie, readClaimCookie } from "./claimCookie.ts";
import { viewerAudit, viewerOf } from "./viewer.ts";

export default function postClaimConfirm(app: App, ctx: Services): void {
  app.post(
    "/app/:id/claim/confirm",
    {
      schema: {
        tags: ["pages"],
        summary: "The claim page's one-click form: claims with the browser's claim cookie for the signed-in person",
        params: AppIdParams,
      },
    },
    async (request, reply) => {
      const viewer = await viewerOf(ctx, request);
      if (viewer === null) throw apiError("sign_in_required", "sign in to claim this app");
      const token = readClaimCookie(request, request.params.id);
      if (token === null) throw apiError("forbidden", "open the claim link from your agent in this browser first");
      const claimed = await ctx.apps.claim(request.params.id, viewer.userId, token, viewerAudit(request, viewer));
      clearClaimCookie(ctx, reply, claimed.id);
      return reply.redirect(canonicalUrl(ctx.config.baseUrl, { ...claimed, ownerHandle: viewer.handle }), 303);
    },
  );
}
