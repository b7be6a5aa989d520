import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { LIST_DEFAULT_LIMIT } from "../../domain/apps/listing.ts";
import { canonicalUrl, uuidUrl } from "../../domain/apps/urls.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { ListRow } from "./schemas.ts";

export default function listApps(app: App, ctx: Services): void {
  app.get(
    "/app",
    {
      schema: {
        tags: ["apps"],
        summary: "The caller's apps, newest first by creation, in pages",
        security: security.user,
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: LIST_DEFAULT_LIMIT })),
            cursor: Type.Optional(Type.String({ description: "nextCursor of the previous page; opaque" })),
          },
          { additionalProperties: false },
        ),
        response: { 200: ok({ apps: Type.Array(ListRow), nextCursor: Type.Union([Type.String(), Type.Null()]) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const { rows, nextCursor } = await ctx.apps.list(user.userId, request.query.limit ?? LIST_DEFAULT_LIMIT, request.query.cursor ?? null);
      const base = ctx.config.baseUrl;
      return {
        ok: true as const,
        apps: rows.map(({ app: a, role }) => ({
          id: a.id,
          role,
          manifestId: a.manifestId,
          displayName: a.displayName,
          revision: a.revision,
          capabilities: a.manifest.capabilities,
          // Owners and the owning team's members get the canonical URL; people it is shared
          // with the UUID form, which redirects to it.
          url: role === "owner" || role === "team-admin" || role === "team-member" ? canonicalUrl(base, a) : uuidUrl(base, a.id),
          createdAt: iso(a.createdAt),
          updatedAt: iso(a.updatedAt),
        })),
        nextCursor,
      };
    },
  );
}
