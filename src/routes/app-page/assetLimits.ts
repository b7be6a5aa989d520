import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import { enforceRateLimit, type BucketRule } from "../../http/rate-limit/index.ts";

/** Spec: asset writes (POST and DELETE) are throttled per app; ours allows 60 a minute. */
export const ASSET_WRITES: BucketRule = { name: "asset_writes", capacity: 60 };

/** An onRequest hook: counted before the upload is read, refused with `too_many_requests`. */
export function assetWriteLimit(ctx: Services) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const appId = (request.params as { id?: string }).id ?? "";
    if ((await ctx.apps.get(appId)) === null) return;
    enforceRateLimit(ctx.limiter, request, reply, [{ rule: ASSET_WRITES, key: appId }], { kind: "too_many_requests", baseUrl: ctx.config.baseUrl });
  };
}
