import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { RoutineId, RoutineSchema } from "./schemas.ts";

export default function runRoutine(app: App, ctx: Services): void {
  app.post(
    "/api/v1/routines/:id/run",
    {
      schema: {
        tags: ["routines"],
        summary: "Run a routine now: counts as a tick for its outcome and failure counter, leaves next_run_at alone",
        security: security.user,
        params: RoutineId,
        response: {
          200: ok({
            routine: RoutineSchema,
            result: Type.Unknown({ description: "the op's envelope: {ok: true, value} or {ok: false, error: {kind, message}}" }),
          }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, ...(await ctx.routines.runNow(user.userId, request.params.id)) };
    },
  );
}
