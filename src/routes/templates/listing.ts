import multipart from "@fastify/multipart";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ASSET_MAX_BYTES, assetTooLarge } from "../../domain/app-page/assets.ts";
import { apiError } from "../../errors/index.ts";
import { requireUser } from "../../http/auth.ts";
import { readUpload } from "../../http/multipart.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../routines/schemas.ts";
import { CategorySchema, ListingSchema, MediaSchema } from "./schemas.ts";

const Nullable = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);

/** An app's template listing (`app:template-edit`): read, patch, publish, disable, media. */
export default function templateListingRoutes(app: App, ctx: Services): void {
  const base = "/api/v1/apps/:appId/template-listing";
  const listing = { 200: ok({ listing: ListingSchema }) };

  app.get(base, { schema: { tags: ["templates"], summary: "The app's template listing (draft, resolved, validation)", security: security.user, params: AppIdParams, response: listing } }, async (request) => {
    const user = await requireUser(ctx, request);
    return { ok: true as const, listing: await ctx.templates.get(request.params.appId, user) };
  });

  app.patch(
    base,
    {
      schema: {
        tags: ["templates"],
        summary: "Change the supplied content fields only; never enables, disables or publishes",
        security: security.user,
        params: AppIdParams,
        body: Type.Object(
          { title: Type.Optional(Nullable(100)), summary: Type.Optional(Nullable(300)), contentMarkdown: Type.Optional(Nullable(20_000)), category: Type.Optional(Type.Union([CategorySchema, Type.Null()])) },
          { additionalProperties: false },
        ),
        response: listing,
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, listing: await ctx.templates.patch(request.params.appId, user, request.body) };
    },
  );

  app.post(
    `${base}/publish`,
    { schema: { tags: ["templates"], summary: "Publish at the app's current revision; 422 template_listing_incomplete names what is missing", security: security.user, params: AppIdParams, response: listing } },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, listing: await ctx.templates.publish(request.params.appId, user) };
    },
  );

  app.post(
    `${base}/disable`,
    { schema: { tags: ["templates"], summary: "Stop copying and unlist; the draft stays", security: security.user, params: AppIdParams, response: listing } },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, listing: await ctx.templates.disable(request.params.appId, user) };
    },
  );

  app.delete(
    `${base}/media/:mediaId`,
    {
      schema: {
        tags: ["templates"],
        summary: "Remove a cover or screenshot; idempotent",
        security: security.user,
        params: Type.Object({ appId: Type.String({ maxLength: 100 }), mediaId: Type.String({ maxLength: 100 }) }),
        response: { 200: ok({ deleted: Type.Boolean() }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      return { ok: true as const, deleted: await ctx.templates.deleteMedia(request.params.appId, user, request.params.mediaId) };
    },
  );

  // Scoped: only this route parses multipart bodies.
  void app.register(async (scope: App) => {
    await scope.register(multipart, { limits: { fileSize: ASSET_MAX_BYTES, files: 1, fields: 4, fieldSize: 1024, parts: 6 } });
    scope.post(
      `${base}/media`,
      {
        schema: {
          tags: ["templates"],
          summary: "Upload a cover (replaces the old one) or a gallery screenshot: multipart kind, alt, caption?, file (PNG, JPEG, GIF or WebP)",
          security: security.user,
          params: AppIdParams,
          consumes: ["multipart/form-data"],
          response: { 201: ok({ media: MediaSchema }) },
        },
      },
      async (request, reply) => {
        const user = await requireUser(ctx, request);
        const upload = await readUpload(request, (declared) => assetTooLarge(declared));
        if (upload.file === null) throw apiError("invalid_request", "the multipart field file is missing");
        const media = await ctx.templates.addMedia(request.params.appId, user, {
          kind: upload.fields.kind ?? "",
          alt: upload.fields.alt ?? "",
          caption: upload.fields.caption ?? null,
          contentType: upload.file.mimetype,
          data: upload.file.data,
        });
        return reply.status(201).send({ ok: true as const, media });
      },
    );
  });
}
