import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import { OkOnly } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { requireReporter } from "./credentials.ts";
import { reportLimits } from "./reportLimits.ts";

/** Spec Limits: a load-error report body is at most 2 KiB. */
export const LOAD_ERROR_MAX_BYTES = 2 * 1024;

export default function postLoadError(app: App, ctx: Services): void {
  app.post(
    "/app/:id/load-error/report",
    {
      bodyLimit: LOAD_ERROR_MAX_BYTES,
      onRequest: reportLimits(ctx, "load_error_report"),
      schema: {
        tags: ["web"],
        summary: "Report that the page failed to load a script, style, image or the app itself; lands in diag",
        security: [{ renderToken: [] }, { appToken: [] }, { userToken: [] }],
        params: AppIdParams,
        body: Type.Object({ message: Type.String({ minLength: 1 }), url: Type.Optional(Type.String()) }, { additionalProperties: false }),
        response: { 200: OkOnly },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      await requireReporter(ctx, await principalWithQueryToken(ctx, request), record);
      // Query strings may carry tokens (`?t=`); the path is enough to find what failed.
      const url = (request.body.url ?? "").replace(/\?.*$/, "");
      ctx.diag.push(record.id, { message: `[load-error] ${request.body.message}${url === "" ? "" : ` ${url}`}`, source: url, line: 0, col: 0, stack: "" });
      return { ok: true as const };
    },
  );
}
