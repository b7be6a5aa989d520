import multipart from "@fastify/multipart";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ASSET_MAX_BYTES, assetTooLarge, checkUploadKey } from "../../domain/app-page/assets.ts";
import { apiError } from "../../errors/index.ts";
import { principalOf } from "../../http/auth.ts";
import { readUpload } from "../../http/multipart.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { assetWriteLimit } from "./assetLimits.ts";
import { requireAssetUser } from "./credentials.ts";

export default function uploadAsset(app: App, ctx: Services): void {
  // Scoped: only this route parses multipart bodies.
  void app.register(async (scope: App) => {
    await scope.register(multipart, { limits: { fileSize: ASSET_MAX_BYTES, files: 1, fields: 4, fieldSize: 1024, parts: 6 } });
    scope.post(
      "/app/:id/assets",
      {
        onRequest: assetWriteLimit(ctx),
        schema: {
          tags: ["assets"],
          summary: "Upload an asset (multipart/form-data: key, file); at most 10 MiB, 50 per app, 100 MiB per app",
          security: [{ appToken: [] }, { userToken: [] }, { renderToken: [] }, { claimCookie: [] }],
          params: AppIdParams,
          consumes: ["multipart/form-data"],
          response: {
            201: Type.Object({ ok: Type.Literal(true), key: Type.String(), url: Type.String({ format: "uri" }), sizeBytes: Type.Integer({ minimum: 0 }) }),
          },
        },
      },
      async (request, reply) => {
        const record = await ctx.apps.find(request.params.id);
        await requireAssetUser(ctx, request, await principalOf(ctx, request), record);
        const upload = await readUpload(request, (declared) => assetTooLarge(declared));
        const key = upload.fields.key ?? null;
        const file = upload.file;
        if (key === null || key === "") throw apiError("invalid_request", "the multipart field key is missing");
        if (file === null) throw apiError("invalid_request", "the multipart field file is missing");
        const stored = await ctx.assets.put(record.id, checkUploadKey(key), file.mimetype, file.data);
        return reply.status(201).send({ ok: true as const, key: stored.key, url: stored.url, sizeBytes: stored.sizeBytes });
      },
    );
  });
}
