import type { Services } from "../../services.ts";
import { ownerSecretScope } from "../../domain/secrets/access.ts";
import { principalOf } from "../../http/auth.ts";
import { OkOnly, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { SecretParams } from "./schemas.ts";

export default function deleteSecret(app: App, ctx: Services): void {
  app.delete(
    "/app/:id/secrets/:name",
    {
      schema: {
        tags: ["secrets"],
        summary: "Delete a secret (404 secret_not_found when absent)",
        security: security.user,
        params: SecretParams,
        response: { 200: OkOnly },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      const scope = await ownerSecretScope(await principalOf(ctx, request), record, ctx.apps);
      await ctx.secrets.delete(scope, request.params.name);
      return { ok: true as const };
    },
  );
}
