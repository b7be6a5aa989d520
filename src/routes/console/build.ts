import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { signInPage } from "../../web/pages/common.ts";
import { buildPage } from "../../web/pages/console/build.ts";
import { viewerOf } from "../pages/viewer.ts";

/** `/builds/{id}` (issue 19): a build's progress, readable by whoever may read its status. */
export default function buildPages(app: App, ctx: Services): void {
  app.get("/builds/:id", { schema: { tags: ["pages"], summary: "A build's progress (HTML)", params: Type.Object({ id: Type.String({ maxLength: 100 }) }) } }, async (request, reply) => {
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) return sendPage(reply, signInPage({ returnTo: `/builds/${encodeURIComponent(request.params.id)}`, intro: "Sign in to follow this build." }), 401);
    const status = await ctx.builds.status(request.params.id, { kind: "user", userId: viewer.userId });
    return sendPage(reply, buildPage({ handle: viewer.handle, status }));
  });
}
