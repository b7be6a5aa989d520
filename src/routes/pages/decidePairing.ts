import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { decidedPage, enterCodePage } from "../../web/pages/pair.ts";
import { limitApprovals } from "../pair/limits.ts";
import { lockedOut } from "../pair/lockout.ts";
import { viewerOf } from "./viewer.ts";

export default function decidePairing(app: App, ctx: Services): void {
  app.post(
    "/pair",
    {
      schema: {
        tags: ["pages"],
        summary: "The approval page's form: approve or deny a code as the signed-in person (HTML)",
        consumes: ["application/x-www-form-urlencoded"],
        body: Type.Object(
          {
            user_code: Type.String({ minLength: 1, maxLength: 64 }),
            decision: Type.Union([Type.Literal("approve"), Type.Literal("deny")]),
          },
          { additionalProperties: false },
        ),
      },
      // The same action as POST /api/pair/approve, so the same per-user bucket.
      preHandler: limitApprovals(ctx),
    },
    async (request, reply) => {
      const viewer = await viewerOf(ctx, request);
      if (viewer === null) throw apiError("sign_in_required", "sign in to approve or deny a code");
      let outcome;
      try {
        outcome = await ctx.pairings.decide(viewer.userId, request.body.user_code, request.body.decision);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        return sendPage(reply, enterCodePage({ handle: viewer.handle, code: request.body.user_code, error: error.message }), error.status);
      }
      if (outcome.status === "locked") throw lockedOut(outcome.lock, request, ctx.config.baseUrl);
      return sendPage(reply, decidedPage({ handle: viewer.handle, status: outcome.status }));
    },
  );
}
