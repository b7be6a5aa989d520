import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { limitPerIp, PAIR_POLL_PER_IP } from "./limits.ts";
import { PollBody, PollResponse } from "./schemas.ts";
import { clientIp } from "../../http/auth.ts";

export default function pollPairing(app: App, ctx: Services): void {
  app.post(
    "/api/pair/poll",
    {
      schema: {
        tags: ["pairing"],
        summary: "Poll a pairing: pending, slow_down, approved (token, once), denied, expired or consumed",
        security: security.none,
        body: PollBody,
        response: { 200: PollResponse },
      },
      preHandler: limitPerIp(ctx, PAIR_POLL_PER_IP),
    },
    async (request) => {
      const result = await ctx.pairings.poll(request.body.device_code, clientIp(request));
      if (result.status === "approved") return { ok: true as const, status: result.status, token: result.token, expiresAt: iso(result.expiresAt) };
      return { ok: true as const, ...result };
    },
  );
}
