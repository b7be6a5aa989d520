import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import { clientNetwork, requireUser } from "../../http/auth.ts";
import { enforceRateLimit, type BucketRule } from "../../http/rate-limit/index.ts";

// The spec's rate-limit table, rows /api/pair/*.
export const PAIR_START_PER_IP: BucketRule = { name: "pair-start:ip", capacity: 30 };
export const PAIR_POLL_PER_IP: BucketRule = { name: "pair-poll:ip", capacity: 60 };
export const PAIR_APPROVE_PER_USER: BucketRule = { name: "pair-approve:user", capacity: 20 };

type PreHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** A preHandler counting the request in `rule`'s bucket for the client's address. */
export function limitPerIp(ctx: Services, rule: BucketRule): PreHandler {
  return async (request, reply) => {
    enforceRateLimit(ctx.limiter, request, reply, [{ rule, key: clientNetwork(request) }], { baseUrl: ctx.config.baseUrl });
  };
}

/** A preHandler counting approvals per user (page or API alike), which needs the user first. */
export function limitApprovals(ctx: Services): PreHandler {
  return async (request, reply) => {
    const principal = await requireUser(ctx, request);
    enforceRateLimit(ctx.limiter, request, reply, [{ rule: PAIR_APPROVE_PER_USER, key: principal.userId }], { baseUrl: ctx.config.baseUrl });
  };
}
