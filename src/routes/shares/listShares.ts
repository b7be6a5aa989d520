import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../routines/schemas.ts";
import { IncomingShareSchema, ShareSchema } from "./schemas.ts";

export default function listShares(app: App, ctx: Services): void {
  app.get(
    "/api/v1/apps/:appId/shares",
    {
      schema: {
        tags: ["shares"],
        summary: "The app's grants and invitations, newest first; owner only",
        security: security.user,
        params: AppIdParams,
        response: { 200: ok({ shares: Type.Array(ShareSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const shares = await ctx.shares.list(request.params.appId, user);
      return { ok: true as const, shares: shares.map((s) => ({ ...s, createdAt: iso(s.createdAt), expiresAt: s.expiresAt === null ? null : iso(s.expiresAt) })) };
    },
  );

  app.get(
    "/api/v1/shares/incoming",
    {
      schema: {
        tags: ["shares"],
        summary: "Open invitations addressed to the caller",
        security: security.user,
        response: { 200: ok({ shares: Type.Array(IncomingShareSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const shares = await ctx.shares.incoming(user.userId);
      return { ok: true as const, shares: shares.map((s) => ({ ...s, createdAt: iso(s.createdAt), expiresAt: iso(s.expiresAt) })) };
    },
  );
}
