import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ownerSecretScope } from "../../domain/secrets/access.ts";
import { principalOf } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { SecretName, SecretValue } from "./schemas.ts";

export default function createSecret(app: App, ctx: Services): void {
  app.post(
    "/app/:id/secrets",
    {
      schema: {
        tags: ["secrets"],
        summary: "Create a secret, seen by app code as env.<NAME> from the next call (409 if the name exists)",
        security: security.user,
        params: AppIdParams,
        body: Type.Object({ name: SecretName, value: SecretValue }, { additionalProperties: false }),
        response: { 201: ok({ name: Type.String() }) },
      },
    },
    async (request, reply) => {
      const record = await ctx.apps.find(request.params.id);
      const scope = await ownerSecretScope(await principalOf(ctx, request), record, ctx.apps);
      await ctx.secrets.create(scope, request.body.name, request.body.value);
      return reply.status(201).send({ ok: true, name: request.body.name });
    },
  );
}
