import type { Services } from "../../services.ts";
import { iso } from "../../config/clock.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import type { App } from "../../http/types.ts";
import { newNonce, sendPage } from "../../web/layout.ts";
import { claimPage } from "../../web/pages/claim.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { readClaimCookie } from "./claimCookie.ts";
import { viewerOf } from "./viewer.ts";

export default function getClaimPage(app: App, ctx: Services): void {
  app.get(
    "/app/:id/claim",
    {
      schema: {
        tags: ["pages"],
        summary: "Claim page (HTML): the app token arrives in the URL fragment (#token=…), never in a query",
        params: AppIdParams,
      },
    },
    async (request, reply) => {
      const record = await ctx.apps.find(request.params.id);
      // Claimed already: nothing to do here; the app lives at its canonical address.
      if (record.ownerUserId !== null) return reply.redirect(canonicalUrl(ctx.config.baseUrl, record), 303);
      const viewer = await viewerOf(ctx, request);
      const nonce = newNonce();
      const page = claimPage({
        appId: record.id,
        displayName: record.displayName,
        manifestId: record.manifestId,
        revision: record.revision,
        expiresAt: record.expiresAt === null ? null : `${iso(record.expiresAt).slice(0, 16).replace("T", " ")} UTC`,
        handle: viewer?.handle ?? null,
        holdsToken: readClaimCookie(request, record.id) !== null,
        nonce,
      });
      return sendPage(reply, page, 200, { scriptNonce: nonce });
    },
  );
}
