import multipart from "@fastify/multipart";
import type { AppContext } from "../../context.ts";
import { requirePermission } from "../../domain/apps/access.ts";
import { ASSET_MAX_BYTES, assetTooLarge, checkAssetKey } from "../../domain/web/assets.ts";
import { apiError } from "../../errors/index.ts";
import { readUpload } from "../../http/multipart.ts";
import type { App } from "../../http/types.ts";
import { assetWriteLimit } from "../web/assetLimits.ts";
import { consoleKit, Params } from "./opened.ts";

/**
 * Uploading an asset from the console's assets tab: the same checks as `POST /app/{id}/assets`
 * (key, size, count, quota, the per-app write bucket), multipart parsed only in this scope, which
 * sits inside the page scope and so keeps its Origin rule.
 */
export default function appUpload(app: App, ctx: AppContext): void {
  const { open, back, summary } = consoleKit(ctx);
  void app.register(async (scope: App) => {
    await scope.register(multipart, { limits: { fileSize: ASSET_MAX_BYTES, files: 1, fields: 2, fieldSize: 1024, parts: 4 } });
    scope.post(
      "/apps/:id/assets",
      { schema: { ...summary("upload an asset"), params: Params, consumes: ["multipart/form-data"] }, onRequest: assetWriteLimit(ctx) },
      async (request, reply) => {
        const o = await open(request, request.params.id, reply);
        if (o === null) return reply;
        requirePermission(o.role, o.app, "source:write");
        const upload = await readUpload(request, (declared) => assetTooLarge(declared));
        const key = upload.fields.key?.trim() ?? "";
        if (key === "") throw apiError("invalid_request", "name the asset (its key)");
        if (upload.file === null || upload.file.data.length === 0) throw apiError("invalid_request", "choose a file to upload");
        await ctx.assets.put(o.app.id, checkAssetKey(key), upload.file.mimetype, upload.file.data);
        return back(reply, o, "assets");
      },
    );
  });
}
