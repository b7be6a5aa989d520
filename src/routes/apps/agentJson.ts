import type { Services } from "../../services.ts";
import { uuidUrl } from "../../domain/apps/urls.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { describeView } from "./views.ts";
import { AppIdParams } from "./schemas.ts";

/**
 * `GET /app/{id}/agent.json` (DECISIONS §11): what describe says, plus how an agent calls each
 * operation (URL, auth, a curl line) and the app's MCP endpoint; operations as the caller's
 * role may run them.
 */
export default function agentJson(app: App, ctx: Services): void {
  app.get(
    "/app/:id/agent.json",
    {
      schema: {
        tags: ["agents"],
        summary: "Describe plus call URLs, authentication, MCP URLs and a curl line per operation",
        security: [{}, { appToken: [] }, { userToken: [] }, { session: [] }],
        params: AppIdParams,
      },
    },
    async (request) => {
      const { app: a, role } = await ctx.apps.load(request.params.id, await principalOf(ctx, request), "view");
      const base = uuidUrl(ctx.config.baseUrl, a.id);
      const described = describeView(ctx.config.baseUrl, a, role);
      return {
        ...described,
        auth: {
          header: "Authorization: Bearer <token>",
          tokens:
            a.ownerUserId === null
              ? "this app's own token (svc_app_…), returned once when it was created"
              : "a user token (svc_user_…) of someone the app is shared with; pair at /pair to get one",
        },
        mcp: { app: `${base}/mcp`, service: `${ctx.config.baseUrl}/mcp` },
        describe: `${base}/describe`,
        docs: `${ctx.config.baseUrl}/llms.txt`,
        operations: described.operations.map((op) => {
          const callUrl = `${base}/api/${encodeURIComponent(op.id)}`;
          return {
            ...op,
            method: "POST",
            callUrl,
            curl: `curl -s -X POST ${callUrl} -H 'authorization: Bearer <token>' -H 'content-type: application/json' -d '{}'`,
          };
        }),
      };
    },
  );
}
