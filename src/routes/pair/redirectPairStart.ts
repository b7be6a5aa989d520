import type { Services } from "../../services.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";

export default function redirectPairStart(app: App, ctx: Services): void {
  app.post(
    "/pair/start",
    {
      schema: {
        tags: ["pairing"],
        summary: "Legacy path: 308 to /api/pair/start (a 308 keeps the method and body)",
        security: security.none,
      },
      // The body is the target's business; this route must not refuse what that one would accept.
      bodyLimit: 16 * 1024,
    },
    async (_request, reply) => reply.redirect(`${ctx.config.baseUrl}/api/pair/start`, 308),
  );
}
