import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams, IntervalField, RoutineSchema } from "./schemas.ts";

export default function createRoutine(app: App, ctx: Services): void {
  app.post(
    "/api/v1/apps/:appId/routines",
    {
      schema: {
        tags: ["routines"],
        summary: "Run one declared op of an app on a timer (hourly, daily or weekly) with empty input",
        security: security.user,
        params: AppIdParams,
        body: Type.Object({ op: Type.String({ minLength: 1, maxLength: 64 }), interval: IntervalField }, { additionalProperties: false }),
        response: { 201: ok({ routine: RoutineSchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const routine = await ctx.routines.create(user.userId, request.params.appId, request.body);
      return reply.status(201).send({ ok: true, routine });
    },
  );
}
