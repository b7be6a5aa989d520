import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams, RoutineSchema } from "./schemas.ts";

export default function listAppRoutines(app: App, ctx: Services): void {
  app.get(
    "/api/v1/apps/:appId/routines",
    {
      schema: {
        tags: ["routines"],
        summary: "The routines of one app (app:write)",
        security: security.user,
        params: AppIdParams,
        response: { 200: ok({ routines: Type.Array(RoutineSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, routines: await ctx.routines.listForApp(user.userId, request.params.appId) };
    },
  );
}
