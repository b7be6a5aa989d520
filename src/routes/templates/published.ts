import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ok } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { ListingSchema } from "./schemas.ts";

/** `GET /api/v1/templates`: published templates, newest first, for anyone. */
export default function publishedTemplates(app: App, ctx: Services): void {
  app.get(
    "/api/v1/templates",
    {
      schema: {
        tags: ["templates"],
        summary: "Published templates, newest first (no sign-in needed)",
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })) }),
        response: { 200: ok({ templates: Type.Array(ListingSchema) }) },
      },
    },
    async (request) => ({ ok: true as const, templates: await ctx.templates.published(request.query.limit ?? 50) }),
  );
}
