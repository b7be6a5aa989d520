import { Type } from "typebox";

// Spelled out (not mapped from TEMPLATE_CATEGORIES) so the type provider sees each literal.
export const CategorySchema = Type.Union([
  Type.Literal("business"),
  Type.Literal("developer-tools"),
  Type.Literal("education"),
  Type.Literal("entertainment"),
  Type.Literal("lifestyle"),
  Type.Literal("productivity"),
  Type.Literal("utilities"),
]);

const MediaSchema = Type.Object({
  id: Type.String(),
  kind: Type.Union([Type.Literal("cover"), Type.Literal("screenshot")]),
  assetKey: Type.String(),
  url: Type.String({ format: "uri" }),
  alt: Type.String(),
  caption: Type.Union([Type.String(), Type.Null()]),
  position: Type.Integer({ minimum: 0 }),
});

const ContentSchema = Type.Object({
  title: Type.Union([Type.String(), Type.Null()]),
  summary: Type.Union([Type.String(), Type.Null()]),
  contentMarkdown: Type.Union([Type.String(), Type.Null()]),
  category: Type.Union([CategorySchema, Type.Null()]),
  cover: Type.Union([MediaSchema, Type.Null()]),
  gallery: Type.Array(MediaSchema),
});

/** The spec's Template listing resource. */
export const ListingSchema = Type.Object({
  appId: Type.String(),
  creator: Type.Object({ handle: Type.String(), builders: Type.Integer({ minimum: 0 }) }),
  draft: ContentSchema,
  legacyFallback: Type.Boolean(),
  resolved: ContentSchema,
  templateEnabled: Type.Boolean(),
  listed: Type.Boolean(),
  validation: Type.Object({ complete: Type.Boolean(), missingFields: Type.Array(Type.String()) }),
  publicUrl: Type.Union([Type.String(), Type.Null()]),
  publishedRevision: Type.Union([Type.Integer(), Type.Null()]),
});

export { MediaSchema };
