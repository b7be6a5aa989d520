import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { currentStatus } from "./reply.ts";
import { BuildStatusResponse, PreferHeader } from "./schemas.ts";

export default function getBuild(app: App, ctx: Services): void {
  app.get(
    "/api/v1/builds/:buildId",
    {
      schema: {
        tags: ["builds"],
        summary: "A build's status: poll it until a terminal state (published, failed, superseded, canceled, expired)",
        security: [{ appToken: [] }, { userToken: [] }, { session: [] }],
        params: Type.Object({ buildId: Type.String({ maxLength: 100 }) }),
        headers: PreferHeader,
        response: { 200: BuildStatusResponse },
      },
    },
    async (request, reply) => {
      const status = await currentStatus(ctx, request, request.params.buildId, await principalOf(ctx, request));
      if (status.retryAfterSeconds !== undefined) void reply.header("Retry-After", String(status.retryAfterSeconds));
      return status;
    },
  );
}
