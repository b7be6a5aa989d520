import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import { ok } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { authorizeDiag } from "../../domain/diagnostics/index.ts";

const Entry = Type.Object({
  ts: Type.String({ format: "date-time" }),
  message: Type.String(),
  source: Type.String(),
  line: Type.Integer(),
  col: Type.Integer(),
  stack: Type.String(),
});

export default function getDiag(app: App, ctx: Services): void {
  app.get(
    "/app/:id/diag",
    {
      schema: {
        tags: ["web"],
        summary: "The app's diagnostic ring buffer (50 entries, this process), most recent first; owner only",
        security: [{ appToken: [] }, { userToken: [] }, { renderToken: [] }, { session: [] }],
        params: AppIdParams,
        response: { 200: ok({ value: Type.Object({ entries: Type.Array(Entry) }) }) },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      await authorizeDiag(await principalWithQueryToken(ctx, request), record, ctx.apps);
      return { ok: true as const, value: { entries: ctx.diag.list(record.id) } };
    },
  );
}
