import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { InvitationIdParams, InvitationSchema, invitationJson, InvitedRoleSchema, TeamIdParams } from "./schemas.ts";

/**
 * Team invitations. Accept and re-send take only a browser session (spec): an invitation is a
 * person's decision to join, never something a token acts on.
 */
export default function teamInvitationRoutes(app: App, ctx: Services): void {
  app.post(
    "/api/v1/teams/:teamId/invitations",
    {
      schema: {
        tags: ["teams"],
        summary: "Invite an email address to the team (owners and admins); mails a link",
        security: security.user,
        params: TeamIdParams,
        body: Type.Object({ email: Type.String({ minLength: 3, maxLength: 254 }), role: Type.Optional(InvitedRoleSchema) }, { additionalProperties: false }),
        response: { 201: ok({ invitation: InvitationSchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const invitation = await ctx.teamInvitations.invite(request.params.teamId, user.userId, request.body);
      return reply.status(201).send({ ok: true, invitation: invitationJson(invitation) });
    },
  );

  app.get(
    "/api/v1/teams/:teamId/invitations",
    {
      schema: {
        tags: ["teams"],
        summary: "The team's pending invitations, newest first (owners and admins)",
        security: security.user,
        params: TeamIdParams,
        response: { 200: ok({ invitations: Type.Array(InvitationSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, invitations: (await ctx.teamInvitations.list(request.params.teamId, user.userId)).map(invitationJson) };
    },
  );

  app.get(
    "/api/v1/team-invitations",
    {
      schema: {
        tags: ["teams"],
        summary: "Open team invitations to the caller's verified address",
        security: security.user,
        response: { 200: ok({ invitations: Type.Array(Type.Intersect([InvitationSchema, Type.Object({ teamSlug: Type.String(), teamName: Type.String() })])) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const invitations = await ctx.teamInvitations.incoming(user.userId);
      return { ok: true as const, invitations: invitations.map((i) => ({ ...invitationJson(i), teamSlug: i.teamSlug, teamName: i.teamName })) };
    },
  );

  app.post(
    "/api/v1/team-invitations/:invitationId/accept",
    {
      schema: {
        tags: ["teams"],
        summary: "Join the team; browser session only, by the account that verified the invited address",
        security: security.sessionOnly,
        params: InvitationIdParams,
        response: { 200: ok({ teamId: Type.String() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request, { session: "only" });
      const { teamId } = await ctx.teamInvitations.accept(request.params.invitationId, user.userId);
      return { ok: true as const, teamId };
    },
  );

  app.post(
    "/api/v1/team-invitations/:invitationId/resend",
    {
      schema: {
        tags: ["teams"],
        summary: "A fresh invitation with a new expiry, mailed again; the old one stops working (owners and admins, session only)",
        security: security.sessionOnly,
        params: InvitationIdParams,
        response: { 200: ok({ invitation: InvitationSchema }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request, { session: "only" });
      const invitation = await ctx.teamInvitations.resend(request.params.invitationId, user.userId);
      return { ok: true as const, invitation: invitationJson(invitation) };
    },
  );

  app.post(
    "/api/v1/team-invitations/:invitationId/revoke",
    {
      schema: {
        tags: ["teams"],
        summary: "Withdraw a pending invitation (owners and admins); idempotent",
        security: security.user,
        params: InvitationIdParams,
        response: { 200: ok({ revoked: Type.Boolean() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, ...(await ctx.teamInvitations.revoke(request.params.invitationId, user.userId)) };
    },
  );
}
