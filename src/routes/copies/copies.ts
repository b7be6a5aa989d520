import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { replyDeferred } from "../builds/reply.ts";
import { BuildStatusResponse } from "../builds/schemas.ts";

const Params = Type.Object({ id: Type.String({ maxLength: 100 }) });

/** The spec's copy response (Copy response and build status). */
const CopyResponse = ok({
  id: Type.String(),
  url: Type.String(),
  manifestId: Type.String(),
  appName: Type.Union([Type.String(), Type.Null()]),
  displayName: Type.String(),
  revision: Type.Integer(),
  sourceAppId: Type.String(),
  copyKind: Type.Union([Type.Literal("app"), Type.Literal("template")]),
  copiedData: Type.Optional(Type.Object({ keys: Type.Integer(), assets: Type.Integer() })),
  secretsNotCopied: Type.Optional(Type.Array(Type.String())),
});

/** Copies (issue 16): `POST /app/{id}/copy` and the owner's remixable switch. */
export default function copyRoutes(app: App, ctx: Services): void {
  app.post(
    "/app/:id/copy",
    {
      schema: {
        tags: ["copies"],
        summary: "Copy an app into a new private app of the caller's; with include_data, its KV, blobs and assets too (write access needed)",
        security: security.user,
        params: Params,
        body: Type.Optional(
          Type.Object(
            {
              manifest_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
              display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
              idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
              include_data: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
        ),
        response: { 200: CopyResponse, 202: BuildStatusResponse },
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const result = await ctx.copies.copy(request.params.id, user.userId, request.body ?? {});
      if ("deferred" in result) return replyDeferred(ctx, request, reply, result.deferred, user);
      const copy = result.app;
      return {
        ok: true as const,
        id: copy.id,
        url: canonicalUrl(ctx.config.baseUrl, copy),
        manifestId: copy.manifestId,
        appName: copy.manifest.displayName === copy.manifestId ? null : copy.manifest.displayName,
        displayName: copy.displayName,
        revision: copy.revision,
        sourceAppId: result.sourceAppId,
        copyKind: result.copyKind,
        ...(result.copiedData === undefined ? {} : { copiedData: result.copiedData }),
        ...(result.secretsNotCopied === undefined ? {} : { secretsNotCopied: result.secretsNotCopied }),
      };
    },
  );

  app.put(
    "/app/:id/remixable",
    {
      schema: {
        tags: ["copies"],
        summary: "Let anyone copy the app while it is public (owner)",
        security: security.user,
        params: Params,
        body: Type.Object({ remixable: Type.Boolean() }, { additionalProperties: false }),
        response: { 200: ok({ remixable: Type.Boolean() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, remixable: await ctx.copies.setRemixable(request.params.id, user, request.body.remixable) };
    },
  );
}
