import multipart from "@fastify/multipart";
import type { MultipartFile } from "@fastify/multipart";
import { Type } from "typebox";
import type { AppContext } from "../../context.ts";
import { ASSET_MAX_BYTES, assetTooLarge, checkAssetKey } from "../../domain/web/assets.ts";
import { apiError } from "../../errors/index.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { assetWriteLimit } from "./assetLimits.ts";
import { requireAssetUser } from "./credentials.ts";

export default function uploadAsset(app: App, ctx: AppContext): void {
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
        if (!request.isMultipart()) throw apiError("invalid_request", "send multipart/form-data with the fields key and file");
        let key: string | null = null;
        let file: { data: Buffer; mimetype: string } | null = null;
        try {
          for await (const part of request.parts()) {
            if (part.type === "field") {
              if (part.fieldname === "key") key = String(part.value);
            } else if (part.fieldname === "file" && file === null) {
              file = { data: await part.toBuffer(), mimetype: part.mimetype };
            } else {
              await drain(part);
            }
          }
        } catch (error) {
          if ((error as { code?: string }).code === "FST_REQ_FILE_TOO_LARGE") assetTooLarge(Number(request.headers["content-length"] ?? ASSET_MAX_BYTES + 1));
          if ((error as { statusCode?: number }).statusCode !== undefined) throw apiError("invalid_request", `the multipart body is malformed: ${(error as Error).message}`);
          throw error;
        }
        if (key === null || key === "") throw apiError("invalid_request", "the multipart field key is missing");
        if (file === null) throw apiError("invalid_request", "the multipart field file is missing");
        const stored = await ctx.assets.put(record.id, checkAssetKey(key), file.mimetype, file.data);
        return reply.status(201).send({ ok: true as const, key: stored.key, url: stored.url, sizeBytes: stored.sizeBytes });
      },
    );
  });
}

async function drain(part: MultipartFile): Promise<void> {
  for await (const _chunk of part.file) {
    // Discarded: only the first `file` part is kept.
  }
}
