import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../routines/schemas.ts";
import { auditContext } from "../../http/audit.ts";

export default function transferApp(app: App, ctx: Services): void {
  app.post(
    "/api/v1/apps/:appId/transfer",
    {
      schema: {
        tags: ["teams"],
        summary: "Move an app into a team (team: slug) or out of its team to a member (user: handle); owner's rights needed",
        security: security.user,
        params: AppIdParams,
        body: Type.Object(
          { team: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })), user: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) },
          { additionalProperties: false },
        ),
        response: { 200: ok({ id: Type.String(), owner: Type.String({ description: "the new owner's handle or team slug" }), url: Type.String(), moved: Type.Boolean() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const { app: moved, moved: changed } = await ctx.transfer.transfer(request.params.appId, user, request.body, auditContext(request, user));
      return { ok: true as const, id: moved.id, owner: moved.ownerHandle ?? "", url: canonicalUrl(ctx.config.baseUrl, moved), moved: changed };
    },
  );
}
