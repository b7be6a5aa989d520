import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { RoutineId, RoutineSchema } from "./schemas.ts";

export default function getRoutine(app: App, ctx: Services): void {
  app.get(
    "/api/v1/routines/:id",
    {
      schema: {
        tags: ["routines"],
        summary: "One routine; 404 when it is missing or the caller lacks app:write",
        security: security.user,
        params: RoutineId,
        response: { 200: ok({ routine: RoutineSchema }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, routine: await ctx.routines.get(user.userId, request.params.id) };
    },
  );
}
