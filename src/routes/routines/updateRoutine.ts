import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { IntervalField, RoutineId, RoutineSchema } from "./schemas.ts";

export default function updateRoutine(app: App, ctx: Services): void {
  app.patch(
    "/api/v1/routines/:id",
    {
      schema: {
        tags: ["routines"],
        summary: "Change the interval, or disable (schedule kept) and re-enable (schedule restored, failures reset)",
        security: security.user,
        params: RoutineId,
        body: Type.Object({ interval: Type.Optional(IntervalField), enabled: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
        response: { 200: ok({ routine: RoutineSchema }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, routine: await ctx.routines.update(user.userId, request.params.id, request.body) };
    },
  );
}
