import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ownerSecretScope } from "../../domain/secrets/access.ts";
import { principalOf } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { SecretParams, SecretValue } from "./schemas.ts";

export default function putSecret(app: App, ctx: Services): void {
  app.put(
    "/app/:id/secrets/:name",
    {
      schema: {
        tags: ["secrets"],
        summary: "Create or replace a secret",
        security: security.user,
        params: SecretParams,
        body: Type.Object({ value: SecretValue }, { additionalProperties: false }),
        response: { 200: ok({ name: Type.String(), created: Type.Boolean() }) },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      const scope = await ownerSecretScope(await principalOf(ctx, request), record, ctx.apps);
      const { created } = await ctx.secrets.put(scope, request.params.name, request.body.value);
      return { ok: true as const, name: request.params.name, created };
    },
  );
}
