import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { MEMBER_REMOVED_NOTE } from "../../domain/teams/teams.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { MemberSchema, memberJson, TeamIdParams, TeamSchema, teamJson } from "./schemas.ts";

/** Teams and their members (DECISIONS §9). */
export default function teamRoutes(app: App, ctx: Services): void {
  app.post(
    "/api/v1/teams",
    {
      schema: {
        tags: ["teams"],
        summary: "Create a team (pro plan and up); the caller becomes its owner",
        security: security.user,
        body: Type.Object(
          { slug: Type.String({ minLength: 1, maxLength: 64, description: "^[a-z0-9][a-z0-9-]{1,38}$; shares the namespace of handles" }), name: Type.Optional(Type.String({ maxLength: 200 })) },
          { additionalProperties: false },
        ),
        response: { 201: ok({ team: TeamSchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const team = await ctx.teams.create(user.userId, request.body);
      return reply.status(201).send({ ok: true, team: teamJson(team) });
    },
  );

  app.get(
    "/api/v1/teams",
    { schema: { tags: ["teams"], summary: "The teams the caller belongs to, with the caller's role", security: security.user, response: { 200: ok({ teams: Type.Array(TeamSchema) }) } } },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, teams: (await ctx.teams.mine(user.userId)).map(teamJson) };
    },
  );

  app.get(
    "/api/v1/teams/:teamId",
    {
      schema: {
        tags: ["teams"],
        summary: "A team and its members; members only",
        security: security.user,
        params: TeamIdParams,
        response: { 200: ok({ team: TeamSchema, members: Type.Array(MemberSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const { team, members } = await ctx.teams.view(request.params.teamId, user.userId);
      return { ok: true as const, team: teamJson(team), members: members.map(memberJson) };
    },
  );

  app.delete(
    "/api/v1/teams/:teamId/members/:userId",
    {
      schema: {
        tags: ["teams"],
        summary: "Remove a member (owners and admins), or leave (yourself); idempotent",
        security: security.user,
        params: Type.Object({ teamId: Type.String({ maxLength: 100 }), userId: Type.String({ maxLength: 100 }) }),
        response: { 200: ok({ removed: Type.Boolean(), note: Type.String() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const { removed } = await ctx.teams.removeMember(request.params.teamId, user.userId, request.params.userId);
      return { ok: true as const, removed, note: MEMBER_REMOVED_NOTE };
    },
  );
}
