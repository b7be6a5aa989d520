import { Type } from "typebox";
import type { BucketRule } from "../../http/rate-limit/index.ts";
import { enforceRateLimit } from "../../http/rate-limit/index.ts";
import { clientIp, clientNetwork } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { HOUR } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { sendPage } from "../../web/layout.ts";
import { reportFormPage } from "../../web/pages/admin.ts";
import { AppIdParams } from "../apps/schemas.ts";

/** DECISIONS §15: 5 reports an hour from one address, however many apps they are about. */
export const REPORTS_PER_IP: BucketRule = { name: "abuse-report:ip", capacity: 5, windowMs: HOUR };

/**
 * The "Report" link of every app page (outside the app's frame): `GET /app/{id}/report` shows the
 * form, `POST` keeps the report for the operators. Anyone may report, signed in or not; the
 * address's bucket is taken before anything is read or kept.
 */
export default function reportApp(app: App, ctx: Services): void {
  const named = async (id: string) => {
    const record = await ctx.apps.find(id);
    // A private app's name is not told to whoever holds its id.
    const open = record.ownerUserId === null || record.visibility === "public";
    return { id: record.id, name: open ? record.displayName : "this app" };
  };
  app.get("/app/:id/report", { schema: { tags: ["pages"], summary: "Report an app to the operators: the form (HTML)", params: AppIdParams } }, async (request, reply) =>
    sendPage(reply, reportFormPage(await named(request.params.id), false)),
  );
  app.post(
    "/app/:id/report",
    {
      schema: {
        tags: ["pages"],
        summary: "Report an app to the operators (a form post; 5 an hour per address)",
        params: AppIdParams,
        body: Type.Object({ reason: Type.String({ maxLength: 40 }), details: Type.Optional(Type.String({ maxLength: 4096 })) }, { additionalProperties: false }),
      },
    },
    async (request, reply) => {
      enforceRateLimit(ctx.limiter, request, reply, [{ rule: REPORTS_PER_IP, key: clientNetwork(request) }], { baseUrl: ctx.config.baseUrl });
      const target = await named(request.params.id);
      await ctx.abuseReports.submit(target.id, { reason: request.body.reason, details: request.body.details }, clientIp(request));
      return sendPage(reply, reportFormPage(target, true), 201);
    },
  );
}
