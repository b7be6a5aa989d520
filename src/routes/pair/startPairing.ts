import type { Services } from "../../services.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { limitPerIp, PAIR_START_PER_IP } from "./limits.ts";
import { StartBody, StartResponse } from "./schemas.ts";

export default function startPairing(app: App, ctx: Services): void {
  app.post(
    "/api/pair/start",
    {
      schema: {
        tags: ["pairing"],
        summary: "Start device pairing: show user_code to a person, then poll with device_code",
        security: security.none,
        body: StartBody,
        response: { 200: StartResponse },
      },
      preHandler: limitPerIp(ctx, PAIR_START_PER_IP),
    },
    async (request) => {
      const started = await ctx.pairings.start(request.body.label);
      return { ok: true as const, ...started };
    },
  );
}
