import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { OkOnly } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { setClaimCookie } from "./claimCookie.ts";

export default function postClaimSession(app: App, ctx: Services): void {
  app.post(
    "/app/:id/claim-session",
    {
      schema: {
        tags: ["pages"],
        summary: "Trade the app token from a claim link for an HttpOnly claim cookie (DECISIONS §5)",
        params: AppIdParams,
        body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 200: OkOnly },
      },
    },
    async (request, reply) => {
      const record = await ctx.apps.find(request.params.id);
      if (record.ownerUserId !== null) throw apiError("already_claimed", "this app has been claimed already");
      const principal = await ctx.tokens.authenticate(request.body.token);
      if (principal.kind !== "app" || principal.appId !== record.id) throw apiError("forbidden", "that token is not this app's token");
      setClaimCookie(ctx, reply, record.id, request.body.token, record.expiresAt);
      return { ok: true as const };
    },
  );
}
