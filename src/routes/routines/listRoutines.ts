import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { RoutineLimits, RoutineSchema } from "./schemas.ts";

export default function listRoutines(app: App, ctx: Services): void {
  app.get(
    "/api/v1/routines",
    {
      schema: {
        tags: ["routines"],
        summary: "Routines on every app where the caller has app:write, with the caller's plan limits",
        security: security.user,
        response: { 200: ok({ routines: Type.Array(RoutineSchema), limits: RoutineLimits }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, ...(await ctx.routines.listForUser(user.userId)) };
    },
  );
}
