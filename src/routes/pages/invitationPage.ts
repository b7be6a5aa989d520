import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { uuidUrl } from "../../domain/apps/urls.ts";
import { apiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { invitationPage, invitationSignInPage } from "../../web/pages/invitation.ts";
import { viewerAudit, viewerOf } from "./viewer.ts";

const Params = Type.Object({ appId: Type.String({ maxLength: 100 }) });

/** `GET /invitations/{appId}`: the invitation mail's link; the form's POST accepts and opens the app. */
export default function invitationRoutes(app: App, ctx: Services): void {
  app.get("/invitations/:appId", { schema: { tags: ["pages"], summary: "A share invitation's page (HTML): sign in, then accept", params: Params } }, async (request, reply) => {
    const path = `/invitations/${encodeURIComponent(request.params.appId)}`;
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) return sendPage(reply, invitationSignInPage(path));
    // First: a malformed id is 400 and reaches no query.
    const target = await ctx.apps.find(request.params.appId);
    const invitation = (await ctx.shares.incoming(viewer.userId)).find((s) => s.appId === request.params.appId);
    if (invitation === undefined) {
      // Accepted already: go straight to the app; otherwise there is nothing here for this person.
      if ((await ctx.shares.accepted(request.params.appId, viewer.userId)) !== null) return reply.redirect(uuidUrl(ctx.config.baseUrl, request.params.appId), 303);
      throw apiError("not_found", "You hold no open invitation to this app. It may have expired or been revoked, or it was sent to another account.");
    }
    return sendPage(reply, invitationPage({ handle: viewer.handle, path, displayName: target.displayName, role: invitation.role, invitedBy: invitation.invitedBy }));
  });

  app.post("/invitations/:appId", { schema: { tags: ["pages"], summary: "The invitation page's form: accept, then open the app", params: Params } }, async (request, reply) => {
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) throw apiError("sign_in_required", "sign in to accept an invitation");
    await ctx.shares.accept(request.params.appId, viewer.userId, viewerAudit(request, viewer));
    return reply.redirect(uuidUrl(ctx.config.baseUrl, request.params.appId), 303);
  });
}
