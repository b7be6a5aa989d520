import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { OkOnly, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { RoutineId } from "./schemas.ts";

export default function deleteRoutine(app: App, ctx: Services): void {
  app.delete(
    "/api/v1/routines/:id",
    {
      schema: {
        tags: ["routines"],
        summary: "Delete a routine",
        security: security.user,
        params: RoutineId,
        response: { 200: OkOnly },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      await ctx.routines.delete(user.userId, request.params.id);
      return { ok: true as const };
    },
  );
}
