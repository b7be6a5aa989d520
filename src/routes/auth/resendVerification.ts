import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { requireUser } from "../../http/auth.ts";
import { enforceRateLimit } from "../../http/rate-limit/index.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { VERIFY_RESEND_PER_USER } from "./limits.ts";

export default function resendVerification(app: App, ctx: Services): void {
  app.post(
    "/api/auth/verify-email/resend",
    {
      schema: {
        tags: ["accounts"],
        summary: "Mail a fresh verification link to the account's address",
        security: security.user,
        response: { 200: ok({ alreadyVerified: Type.Optional(Type.Literal(true)) }) },
      },
    },
    async (request, reply) => {
      const principal = await requireUser(ctx, request);
      const user = await ctx.users.byId(principal.userId);
      if (user === null) throw apiError("unauthorized", "the account no longer exists");
      if (user.emailVerified) return { ok: true as const, alreadyVerified: true as const };
      enforceRateLimit(ctx.limiter, request, reply, [{ rule: VERIFY_RESEND_PER_USER, key: user.id }], { baseUrl: ctx.config.baseUrl });
      await ctx.emailVerification.start(user);
      return { ok: true as const };
    },
  );
}
