import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { revisionEtag } from "../../domain/apps/urls.ts";
import { clientNetwork, principalOf } from "../../http/auth.ts";
import { enforceRateLimit, type BucketRule } from "../../http/rate-limit/index.ts";
import type { App } from "../../http/types.ts";
import { deferredResponse } from "../builds/reply.ts";
import { BuildStatusResponse, IdempotencyHeaders } from "../builds/schemas.ts";
import { idempotent } from "./idempotent.ts";
import { mcpHint } from "../../domain/agents/setup.ts";
import { CreateBody, CreateResponse } from "./schemas.ts";
import { appView } from "./views.ts";

// DECISIONS §1: anonymous creates are metered per client address (a fresh looping app per
// request was the churn attack of issue 14), an IPv6 client per /64 (networkOf); authenticated
// creates and updates are not.
export const ANONYMOUS_CREATES_PER_IP: BucketRule = { name: "create:ip", capacity: 30 };

export default function createApp(app: App, ctx: Services): void {
  app.post(
    "/app",
    {
      schema: {
        tags: ["apps"],
        summary: "Create an app: anonymous (one-time per-app token, 7-day life) or an upsert by (user, manifest id)",
        security: [{}, { userToken: [] }, { session: [] }],
        body: CreateBody,
        headers: IdempotencyHeaders,
        response: { 200: CreateResponse, 201: CreateResponse, 202: BuildStatusResponse },
      },
      // Before the body is read: a refused create costs its headers only, whatever it sends.
      onRequest: async (request, reply) => {
        if ((await principalOf(ctx, request)) === null) {
          enforceRateLimit(ctx.limiter, request, reply, [{ rule: ANONYMOUS_CREATES_PER_IP, key: clientNetwork(request) }], { baseUrl: ctx.config.baseUrl });
        }
      },
    },
    async (request, reply) => {
      const actor = await principalOf(ctx, request);
      const { module, ui, styles, pair, label } = request.body;
      return idempotent(ctx, request, reply, actor, async () => {
        const result = await ctx.apps.create(actor, { module, ui: ui ?? null, styles: styles ?? null, pair, label });
        if ("deferred" in result) return deferredResponse(ctx, request, result.deferred, actor);
        const view = appView(ctx.config.baseUrl, result.app, result.warnings);
        return {
          status: result.created ? 201 : 200,
          etag: revisionEtag(result.app.revision),
          body: {
            ...view,
            ...(result.token === null ? {} : { token: result.token }),
            ...(result.app.expiresAt === null || result.token === null ? {} : { expiresAt: iso(result.app.expiresAt) }),
            ...(result.pairing === null ? {} : { pairing: result.pairing }),
            mcpHint: mcpHint(ctx.config.baseUrl),
          },
        };
      });
    },
  );
}
