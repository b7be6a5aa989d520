import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { VISIBILITIES } from "../../domain/access/access.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";

const VisibilitySchema = Type.Union([Type.Literal(VISIBILITIES[0]), Type.Literal(VISIBILITIES[1]), Type.Literal(VISIBILITIES[2])]);

export default function putVisibility(app: App, ctx: Services): void {
  app.put(
    "/app/:id/visibility",
    {
      schema: {
        tags: ["apps"],
        summary: "Who may open a claimed app beyond its owner: private (default), signed-in or public; owner",
        security: security.user,
        params: AppIdParams,
        body: Type.Object({ visibility: VisibilitySchema }, { additionalProperties: false }),
        response: { 200: ok({ visibility: VisibilitySchema }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const updated = await ctx.apps.setSettings(request.params.id, user, { visibility: request.body.visibility });
      return { ok: true as const, visibility: updated.visibility };
    },
  );
}
