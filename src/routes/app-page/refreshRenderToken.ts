import { requirePermission } from "../../domain/access/access.ts";
import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { clientNetwork, principalOf } from "../../http/auth.ts";
import { enforceRateLimit, type BucketRule } from "../../http/rate-limit/index.ts";
import { ok, Timestamp } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { refuseSuspended } from "../../domain/apps/suspended.ts";

// Spec Limits: 10 per app per client IP and 60 per app across all addresses, per 60 s.
export const REFRESH_PER_APP_IP: BucketRule = { name: "render_token_refresh_ip", capacity: 10 };
export const REFRESH_PER_APP: BucketRule = { name: "render_token_refresh", capacity: 60 };

export default function refreshRenderToken(app: App, ctx: Services): void {
  app.post(
    "/app/:id/render-token",
    {
      schema: {
        tags: ["web"],
        summary: "Swap a render token for a fresh 7-day one; a person's presented token stays valid for 15 minutes (an anonymous visitor's, shared by the app's visitors, until its own expiry)",
        security: [{ renderToken: [] }],
        params: AppIdParams,
        response: { 200: ok({ token: Type.String(), expiresAt: Timestamp }) },
      },
    },
    async (request, reply) => {
      const record = await ctx.apps.find(request.params.id);
      // Authenticate before taking from the buckets: requests without this app's render token must
      // not use up the refreshes its real holders need.
      const principal = await principalOf(ctx, request);
      if (principal === null) throw apiError("unauthorized", "send the current render token as 'Authorization: Bearer svc_render_…'");
      if (principal.kind !== "render") throw apiError("forbidden", "only a render token can be refreshed here");
      if (principal.appId !== record.id) throw apiError("forbidden", "this render token belongs to another app");
      refuseSuspended(record);
      // A page whose person lost access gets no fresh token to carry on with.
      requirePermission(await ctx.apps.roleOf(principal, record), record, "view");
      enforceRateLimit(
        ctx.limiter,
        request,
        reply,
        [
          { rule: REFRESH_PER_APP_IP, key: `${record.id}:${clientNetwork(request)}` },
          { rule: REFRESH_PER_APP, key: record.id },
        ],
        { kind: "app_busy", limitName: "render_token_refresh", baseUrl: ctx.config.baseUrl },
      );
      const fresh = await ctx.renderTokens.refresh(principal);
      return { ok: true as const, token: fresh.token, expiresAt: iso(fresh.expiresAt ?? 0) };
    },
  );
}
