import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ownerSecretScope } from "../../domain/secrets/access.ts";
import { principalOf } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";

export default function listSecrets(app: App, ctx: Services): void {
  app.get(
    "/app/:id/secrets",
    {
      schema: {
        tags: ["secrets"],
        summary: "Names of the app's secrets (values are never returned by any endpoint); owner only",
        security: security.user,
        params: AppIdParams,
        response: { 200: ok({ names: Type.Array(Type.String()) }) },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      const scope = await ownerSecretScope(await principalOf(ctx, request), record, ctx.apps);
      return { ok: true as const, names: await ctx.secrets.names(scope) };
    },
  );
}
