import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { limitApprovals } from "./limits.ts";
import { lockedOut } from "./lockout.ts";
import { ApproveBody, ApproveResponse } from "./schemas.ts";

export default function approvePairing(app: App, ctx: Services): void {
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
      preHandler: limitApprovals(ctx),
    },
    async (request) => {
      const principal = await requireUser(ctx, request);
      const outcome = await ctx.pairings.decide(principal.userId, request.body.user_code, request.body.decision ?? "approve");
      if (outcome.status === "locked") throw lockedOut(outcome.lock, request, ctx.config.baseUrl);
      return { ok: true as const, status: outcome.status };
    },
  );
}
