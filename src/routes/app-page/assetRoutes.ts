import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { checkUploadKey } from "../../domain/app-page/assets.ts";
import { apiError } from "../../errors/index.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import { OkOnly, ok } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { assetWriteLimit } from "./assetLimits.ts";
import { requireAssetUser } from "./credentials.ts";
import { refuseSuspended } from "../../domain/apps/suspended.ts";

const AssetParams = Type.Object({ id: Type.String(), "*": Type.String({ description: "the asset key" }) });
const assetSecurity: Record<string, string[]>[] = [{ appToken: [] }, { userToken: [] }, { renderToken: [] }, { queryRenderToken: [] }, { claimCookie: [] }];

// Assets are data, never documents of this origin: no sniffing, no scripts, no plugins, and
// `sandbox` puts an SVG or PDF opened directly into an opaque origin. The opaque-origin app
// frame may embed them (cross-origin resource policy).
const SERVE_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Content-Security-Policy": "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox",
  "Cross-Origin-Resource-Policy": "cross-origin",
  "Cache-Control": "private, max-age=300",
};

/** GET list, GET one (signed URL or credentials) and DELETE of an app's assets. */
export default function assetRoutes(app: App, ctx: Services): void {
  app.get(
    "/app/:id/assets",
    {
      schema: {
        tags: ["assets"],
        summary: "The app's assets with fresh signed URLs",
        security: assetSecurity,
        params: Type.Object({ id: Type.String() }),
        response: {
          200: ok({
            assets: Type.Array(
              Type.Object({
                key: Type.String(),
                contentType: Type.String(),
                sizeBytes: Type.Integer(),
                url: Type.String({ format: "uri" }),
                createdAt: Type.String({ format: "date-time" }),
                updatedAt: Type.String({ format: "date-time" }),
              }),
            ),
          }),
        },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      await requireAssetUser(ctx, request, await principalWithQueryToken(ctx, request), record);
      return { ok: true as const, assets: await ctx.assets.list(record.id) };
    },
  );

  app.get(
    "/app/:id/assets/*",
    {
      schema: {
        tags: ["assets"],
        summary: "One asset's bytes with its stored content type: a signed URL (exp, sig) or a credential",
        security: [{}, ...assetSecurity],
        params: AssetParams,
        querystring: Type.Object({ exp: Type.Optional(Type.String()), sig: Type.Optional(Type.String()), t: Type.Optional(Type.String()) }),
      },
    },
    async (request, reply) => {
      const record = await ctx.apps.find(request.params.id);
      // Signed URLs handed out before the suspension included.
      refuseSuspended(record);
      const key = request.params["*"];
      if (!ctx.assets.verify(record.id, key, request.query.exp, request.query.sig)) {
        if (request.query.sig !== undefined && request.query.t === undefined && request.headers.authorization === undefined) {
          throw apiError("forbidden", "this signed URL is invalid or has expired; list the assets for a fresh one");
        }
        await requireAssetUser(ctx, request, await principalWithQueryToken(ctx, request), record);
      }
      const asset = await ctx.assets.read(record.id, key);
      if (asset === null) throw apiError("not_found", `no asset ${key}`);
      return reply.headers(SERVE_HEADERS).type(asset.contentType).send(asset.data);
    },
  );

  app.delete(
    "/app/:id/assets/*",
    {
      onRequest: assetWriteLimit(ctx),
      schema: {
        tags: ["assets"],
        summary: "Delete an asset",
        security: assetSecurity,
        params: AssetParams,
        response: { 200: OkOnly },
      },
    },
    async (request) => {
      const record = await ctx.apps.find(request.params.id);
      await requireAssetUser(ctx, request, await principalWithQueryToken(ctx, request), record);
      if (!(await ctx.assets.delete(record.id, checkUploadKey(request.params["*"])))) throw apiError("not_found", `no asset ${request.params["*"]}`);
      return { ok: true as const };
    },
  );
}
