import multipart from "@fastify/multipart";
import type { Services } from "../../services.ts";
import { requirePermission } from "../../domain/access/access.ts";
import { ASSET_MAX_BYTES, assetTooLarge, checkUploadKey } from "../../domain/app-page/assets.ts";
import { apiError } from "../../errors/index.ts";
import { readUpload } from "../../http/multipart.ts";
import type { App } from "../../http/types.ts";
import { assetWriteLimit } from "../app-page/assetLimits.ts";
import { consoleKit, Params } from "./opened.ts";

/**
 * Uploads from the console: an asset (the same checks as `POST /app/{id}/assets`: key, size,
 * count, quota, the per-app write bucket) and a template's cover or screenshot (the templates
 * service's). Multipart is parsed only in this scope, which sits inside the page scope and so
 * keeps its Origin rule.
 */
export default function appUpload(app: App, ctx: Services): void {
  const { open, back, summary, user } = consoleKit(ctx);
  void app.register(async (scope: App) => {
    await scope.register(multipart, { limits: { fileSize: ASSET_MAX_BYTES, files: 1, fields: 3, fieldSize: 1024, parts: 5 } });
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
        await ctx.assets.put(o.app.id, checkUploadKey(key), upload.file.mimetype, upload.file.data);
        return back(reply, o, "assets");
      },
    );
    scope.post("/apps/:id/template/media", { schema: { ...summary("add a template image"), params: Params, consumes: ["multipart/form-data"] } }, async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      const upload = await readUpload(request, (declared) => assetTooLarge(declared));
      if (upload.file === null || upload.file.data.length === 0) throw apiError("invalid_request", "choose an image to upload");
      // The templates service checks the writer, the kind, the alt text and the image itself.
      await ctx.templates.addMedia(o.app.id, user(o), {
        kind: upload.fields.kind ?? "",
        alt: upload.fields.alt ?? "",
        caption: null,
        contentType: upload.file.mimetype,
        data: upload.file.data,
      });
      return back(reply, o, "template");
    });
  });
}
