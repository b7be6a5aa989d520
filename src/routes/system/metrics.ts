import { createHash, timingSafeEqual } from "node:crypto";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";

/**
 * `GET /metrics` (DECISIONS §16): Prometheus text format for this instance, open only with
 * `Authorization: Bearer $METRICS_TOKEN`; with no token set there is no such route (404), so a
 * public instance never shows its internals by default.
 */
export default function metrics(app: App, ctx: Pick<Services, "metrics" | "config">): void {
  app.get(
    "/metrics",
    {
      schema: { tags: ["system"], summary: "Prometheus metrics of this instance (Bearer METRICS_TOKEN; 404 when unset)", security: [{ metricsToken: [] }] },
    },
    async (request, reply) => {
      const { metrics } = ctx;
      const token = ctx.config.metricsToken;
      if (metrics === null || token === null) throw apiError("not_found", "no route for GET /metrics");
      const sent = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "")?.[1];
      if (sent === undefined || !sameSecret(sent, token)) throw apiError("unauthorized", "send the metrics token as 'Authorization: Bearer <METRICS_TOKEN>'");
      void reply.type(metrics.contentType);
      return metrics.text();
    },
  );
}

/** Compared as digests, in constant time whatever their lengths. */
function sameSecret(sent: string, token: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(sent), digest(token));
}
