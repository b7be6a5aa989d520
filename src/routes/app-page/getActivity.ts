import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ACTIVITY_KINDS, parseActivityQuery } from "../../domain/diagnostics/index.ts";
import { principalOf } from "../../http/auth.ts";
import { ok } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { authorizeActivity } from "../../domain/diagnostics/index.ts";

const Event = Type.Object({
  ts: Type.String({ format: "date-time" }),
  kind: Type.String({ enum: [...ACTIVITY_KINDS] }),
  revision: Type.Integer({ minimum: 0 }),
  summary: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
});

export default function getActivity(app: App, ctx: Services): void {
  app.get(
    "/app/:id/activity",
    {
      schema: {
        tags: ["web"],
        summary: "Durable runtime-failure events, newest first; the app token or the owner's user token",
        security: [{ appToken: [] }, { userToken: [] }, { session: [] }],
        params: AppIdParams,
        // Strings here; parseActivityQuery gives each malformed value its own message.
        querystring: Type.Object({
          kinds: Type.Optional(Type.String({ description: `comma-separated subset of ${ACTIVITY_KINDS.join(", ")}` })),
          since: Type.Optional(Type.String({ description: "date-time; events at or after it" })),
          limit: Type.Optional(Type.String({ description: "integer 1..500, default 100" })),
        }),
        response: { 200: ok({ value: Type.Object({ items: Type.Array(Event) }) }) },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      await authorizeActivity(await principalOf(ctx, request), record, ctx.apps);
      const query = parseActivityQuery(request.query);
      return { ok: true as const, value: { items: await ctx.activity.list(record.id, query) } };
    },
  );
}
