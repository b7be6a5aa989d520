import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import { clientNetwork } from "../../http/auth.ts";
import { enforceRateLimit, type BucketRule } from "../../http/rate-limit/index.ts";

/** Spec rate limits of the page's report routes: 30/min per (app, IP) and 200/min per app. */
export const REPORTS_PER_APP_IP = 30;
export const REPORTS_PER_APP = 200;

/**
 * An onRequest hook taking a token from the route's buckets. It runs before the body is read,
 * so an oversized body is refused (413) after being counted and with the headers already set.
 */
export function reportLimits(ctx: Services, route: "diag_report" | "load_error_report" | "feedback") {
  const perAppIp: BucketRule = { name: `${route}_app_ip`, capacity: REPORTS_PER_APP_IP };
  const perApp: BucketRule = { name: `${route}_app`, capacity: REPORTS_PER_APP };
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const appId = (request.params as { id?: string }).id ?? "";
    // Unknown apps are not counted: 404s come from the handler, and no bucket is made for them.
    if ((await ctx.apps.get(appId)) === null) return;
    enforceRateLimit(
      ctx.limiter,
      request,
      reply,
      [
        { rule: perAppIp, key: `${appId}:${clientNetwork(request)}` },
        { rule: perApp, key: appId },
      ],
      { baseUrl: ctx.config.baseUrl },
    );
  };
}
