import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { apiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { teamInvitationPage, teamInvitationSignInPage, teamJoinedPage } from "../../web/pages/team-invitation.ts";
import { viewerOf } from "./viewer.ts";

const Params = Type.Object({ invitationId: Type.String({ maxLength: 100 }) });

/**
 * `GET /team-invitations/{id}`: the team invitation mail's link. The form's POST is the browser
 * session accepting (the page scope holds it to the Origin rule), after which the person sees
 * the team's apps.
 */
export default function teamInvitationRoutes(app: App, ctx: Services): void {
  app.get(
    "/team-invitations/:invitationId",
    { schema: { tags: ["pages"], summary: "A team invitation's page (HTML): sign in, then join", params: Params } },
    async (request, reply) => {
      const path = `/team-invitations/${encodeURIComponent(request.params.invitationId)}`;
      const viewer = await viewerOf(ctx, request);
      if (viewer === null) return sendPage(reply, teamInvitationSignInPage(path));
      // A malformed id is 400 before any query.
      await ctx.teamInvitations.find(request.params.invitationId);
      const open = (await ctx.teamInvitations.incoming(viewer.userId)).find((i) => i.id === request.params.invitationId);
      if (open === undefined) {
        throw apiError("not_found", "You hold no open invitation here. It may have expired, been re-sent or withdrawn, or it was sent to another address (confirm your address first if you have not).");
      }
      return sendPage(reply, teamInvitationPage({ handle: viewer.handle, path, teamName: open.teamName, slug: open.teamSlug, role: open.role }));
    },
  );

  app.post(
    "/team-invitations/:invitationId",
    { schema: { tags: ["pages"], summary: "The team invitation page's form: join, then see the team's apps", params: Params } },
    async (request, reply) => {
      const viewer = await viewerOf(ctx, request);
      if (viewer === null) throw apiError("sign_in_required", "sign in to accept an invitation");
      const { teamId } = await ctx.teamInvitations.accept(request.params.invitationId, viewer.userId);
      const { team } = await ctx.teams.requireMember(teamId, viewer.userId);
      const apps = await ctx.teams.apps(team.id);
      return sendPage(reply, teamJoinedPage({ handle: viewer.handle, teamName: team.name, slug: team.slug, apps: apps.map((a) => ({ name: a.displayName, url: canonicalUrl(ctx.config.baseUrl, a) })) }));
    },
  );
}
