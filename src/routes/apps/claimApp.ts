import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security, Timestamp } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "./schemas.ts";
import { auditContext } from "../../http/audit.ts";

export default function claimApp(app: App, ctx: Services): void {
  app.post(
    "/app/:id/claim",
    {
      schema: {
        tags: ["apps"],
        summary: "Claim an anonymous app under the signed-in account with its per-app token",
        security: security.user,
        params: AppIdParams,
        body: Type.Object({ token: Type.String({ description: "the app's per-app token (svc_app_…)" }) }, { additionalProperties: false }),
        response: {
          200: ok({ id: Type.String({ format: "uuid" }), manifestId: Type.String(), claimedAt: Timestamp, url: Type.String({ format: "uri" }) }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const claimed = await ctx.apps.claim(request.params.id, user.userId, request.body.token, auditContext(request, user));
      return {
        ok: true as const,
        id: claimed.id,
        manifestId: claimed.manifestId,
        claimedAt: iso(claimed.claimedAt ?? ctx.clock.now()),
        url: canonicalUrl(ctx.config.baseUrl, claimed),
      };
    },
  );
}
