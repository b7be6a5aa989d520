import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { serveShell } from "../app-page/shell.ts";

export default function getCanonicalPage(app: App, ctx: Services): void {
  app.get(
    "/@:handle/:manifestId",
    {
      schema: {
        tags: ["apps"],
        summary: "A claimed app's page (HTML shell) at its canonical URL; owner, visibility, or a query render token `t`",
        security: [{}, { userToken: [] }, { session: [] }, { queryRenderToken: [] }],
        params: Type.Object({ handle: Type.String(), manifestId: Type.String() }),
      },
    },
    async (request, reply) => {
      const found = await ctx.apps.byCanonical(request.params.handle, request.params.manifestId);
      return serveShell(ctx, request, reply, found);
    },
  );
}
