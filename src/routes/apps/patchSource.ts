import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { revisionEtag } from "../../domain/apps/urls.ts";
import { principalOf } from "../../http/auth.ts";
import { replyDeferred } from "../builds/reply.ts";
import { BuildStatusResponse, PreferHeader } from "../builds/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams, PatchResponse } from "./schemas.ts";

const Edit = Type.Object(
  {
    bucket: Type.String({ enum: ["module", "ui", "styles"] }),
    old_string: Type.String({ minLength: 1, description: "exact text that occurs exactly once in the bucket" }),
    new_string: Type.String(),
  },
  { additionalProperties: false },
);

export default function patchSource(app: App, ctx: Services): void {
  app.patch(
    "/app/:id/source",
    {
      schema: {
        tags: ["apps"],
        summary: "Apply exact-string edits to the source atomically against If-Match: \"N\"",
        security: [{ appToken: [] }, { userToken: [] }, { session: [] }],
        params: AppIdParams,
        headers: Type.Object({ "if-match": Type.Optional(Type.String({ description: 'the revision in straight double quotes, e.g. "3"' })), ...PreferHeader.properties }),
        body: Type.Object(
          {
            edits: Type.Array(Edit, { minItems: 1 }),
            expected_revision: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "alternative to If-Match" })),
          },
          { additionalProperties: false },
        ),
        response: { 200: PatchResponse, 202: BuildStatusResponse },
      },
    },
    async (request, reply) => {
      const actor = await principalOf(ctx, request);
      const { edits, expected_revision } = request.body;
      const result = await ctx.apps.patchSource(
        request.params.id,
        actor,
        edits.map((e) => ({ bucket: e.bucket as "module" | "ui" | "styles", old_string: e.old_string, new_string: e.new_string })),
        { ifMatch: request.headers["if-match"], expectedRevision: expected_revision },
      );
      if ("deferred" in result) return replyDeferred(ctx, request, reply, result.deferred, actor);
      void reply.header("ETag", revisionEtag(result.app.revision));
      return { ok: true as const, id: result.app.id, revision: result.app.revision, ...(result.warnings.length > 0 ? { warnings: result.warnings } : {}) };
    },
  );
}
