import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { exposureCsv, LEDGER_SORTS } from "../../domain/teams/exposure.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security, Timestamp } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { TeamIdParams } from "./schemas.ts";

const Count = Type.Integer({ minimum: 0 });
const ExposureSchema = Type.Object({
  public: Count,
  "signed-in": Count,
  template: Count,
  shared: Count,
  private: Count,
  externalShares: Type.Integer({ minimum: 0, description: "grants and open invitations whose grantee is not a member of the team" }),
});

const LedgerEntrySchema = Type.Object({
  type: Type.Union([Type.Literal("grant"), Type.Literal("invitation"), Type.Literal("link")]),
  id: Type.String(),
  appId: Type.String(),
  appName: Type.String(),
  grantee: Type.Union([Type.String(), Type.Null()]),
  role: Type.String(),
  status: Type.Union([Type.Literal("accepted"), Type.Literal("pending"), Type.Literal("invited"), Type.Literal("expired"), Type.Literal("live")]),
  external: Type.Boolean(),
  createdAt: Timestamp,
});

/** What a team's apps expose and to whom (spec: Team exposure summary; the team shares ledger). */
export default function teamExposureRoutes(app: App, ctx: Services): void {
  app.get(
    "/api/v1/teams/:teamId/exposure",
    {
      schema: {
        tags: ["teams"],
        summary: "Each team app counted once by its widest audience; format=csv gives one summary row (owners and admins)",
        security: security.user,
        params: TeamIdParams,
        querystring: Type.Object({ format: Type.Optional(Type.String({ maxLength: 20 })) }),
        response: { 200: ok({ exposure: ExposureSchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const exposure = await ctx.teamExposure.exposure(request.params.teamId, user.userId);
      if (request.query.format === "csv") {
        // The text goes out as it is: the serializer compiled from the JSON schema is bypassed.
        void reply.type("text/csv; charset=utf-8").serializer((body: unknown) => String(body));
        return reply.send(exposureCsv(exposure) as never);
      }
      return { ok: true as const, exposure };
    },
  );

  app.get(
    "/api/v1/teams/:teamId/shares",
    {
      schema: {
        tags: ["teams"],
        summary: "Grants, invitations and live share links across the team's apps, newest first (owners and admins)",
        security: security.user,
        params: TeamIdParams,
        querystring: Type.Object({ sort: Type.Optional(Type.String({ maxLength: 20, description: LEDGER_SORTS.join(" | ") })) }),
        response: { 200: ok({ shares: Type.Array(LedgerEntrySchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const entries = await ctx.teamExposure.ledger(request.params.teamId, user.userId, request.query.sort);
      return { ok: true as const, shares: entries.map((e) => ({ ...e, createdAt: iso(e.createdAt) })) };
    },
  );
}
