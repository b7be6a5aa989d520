import type { AppContext } from "../../context.ts";
import { requireUser } from "../../http/auth.ts";
import { enforceRateLimit } from "../../http/rate-limit/index.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { PAIR_APPROVE_PER_USER } from "./limits.ts";
import { lockedOut } from "./lockout.ts";
import { ApproveBody, ApproveResponse } from "./schemas.ts";

export default function approvePairing(app: App, ctx: AppContext): void {
  app.post(
    "/api/pair/approve",
    {
      schema: {
        tags: ["pairing"],
        summary: "Approve (or deny) a pairing by its user code as the signed-in user",
        security: security.user,
        body: ApproveBody,
        response: { 200: ApproveResponse },
      },
      preHandler: async (request, reply) => {
        // The bucket is per user, so who is asking must be known before it is counted.
        const principal = await requireUser(ctx, request);
        enforceRateLimit(ctx.limiter, request, reply, [{ rule: PAIR_APPROVE_PER_USER, key: principal.userId }], { baseUrl: ctx.config.baseUrl });
      },
    },
    async (request) => {
      const principal = await requireUser(ctx, request);
      const outcome = await ctx.pairings.decide(principal.userId, request.body.user_code, request.body.decision ?? "approve");
      if (outcome.status === "locked") throw lockedOut(outcome.lock, request, ctx.config.baseUrl);
      return { ok: true as const, status: outcome.status };
    },
  );
}
