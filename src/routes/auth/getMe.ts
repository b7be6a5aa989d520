import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { PLAN_LIMITS } from "../../config/plans.ts";
import { apiError } from "../../errors/index.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { UserView, userView } from "./schemas.ts";

export default function getMe(app: App, ctx: Services): void {
  app.get(
    "/api/me",
    {
      schema: {
        tags: ["accounts"],
        summary: "The signed-in user, their plan and its limits",
        security: security.user,
        response: {
          200: ok({ user: UserView, plan: Type.String(), limits: Type.Record(Type.String(), Type.Union([Type.Integer(), Type.Boolean()])) }),
        },
      },
    },
    async (request) => {
      const principal = await requireUser(ctx, request);
      const user = await ctx.users.byId(principal.userId);
      if (user === null) throw apiError("unauthorized", "the account no longer exists");
      return { ok: true as const, user: userView(user), plan: user.plan, limits: { ...PLAN_LIMITS[user.plan] } };
    },
  );
}
