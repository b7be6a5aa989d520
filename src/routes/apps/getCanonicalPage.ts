import { Type } from "typebox";
import type { AppContext } from "../../context.ts";
import { apiError } from "../../errors/index.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { appPlaceholderPage } from "../../web/app-page.ts";

export default function getCanonicalPage(app: App, ctx: AppContext): void {
  app.get(
    "/@:handle/:manifestId",
    {
      schema: {
        tags: ["apps"],
        summary: "A claimed app's page at its canonical URL",
        security: [{}, { userToken: [] }, { session: [] }],
        params: Type.Object({ handle: Type.String(), manifestId: Type.String() }),
      },
    },
    async (request, reply) => {
      const found = await ctx.apps.byCanonical(request.params.handle, request.params.manifestId);
      if (found === null) throw apiError("app_not_found", `no app at /@${request.params.handle}/${request.params.manifestId}`);
      await ctx.apps.load(found.id, await principalOf(ctx, request), "view");
      return reply.type("text/html; charset=utf-8").header("Cache-Control", "no-store").send(appPlaceholderPage(found, ctx.config.baseUrl));
    },
  );
}
