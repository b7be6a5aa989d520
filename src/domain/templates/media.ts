import { apiError } from "../../errors/index.ts";
import { TEMPLATE_MEDIA_PREFIX } from "../app-page/assets.ts";

/** Raster formats a listing shows, by their first bytes. SVG is not among them: it can carry script. */
const SIGNATURES: { type: string; ext: string; matches: (b: Buffer) => boolean }[] = [
  { type: "image/png", ext: "png", matches: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) },
  { type: "image/jpeg", ext: "jpg", matches: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { type: "image/gif", ext: "gif", matches: (b) => b.subarray(0, 4).toString("latin1") === "GIF8" },
  { type: "image/webp", ext: "webp", matches: (b) => b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP" },
];

/**
 * The image's content type, after checking that its bytes are the format it claims: a listing's
 * media are shown to everyone, so a declared type is never taken on trust.
 */
export function checkImage(declared: string, data: Buffer): string {
  const type = declared.split(";")[0]?.trim().toLowerCase() ?? "";
  const format = SIGNATURES.find((s) => s.type === type);
  if (format === undefined) throw apiError("template_media_invalid", `media must be PNG, JPEG, GIF or WebP images; got ${type || "no type"}`);
  if (!format.matches(data)) throw apiError("template_media_invalid", `the file is not a ${type} image`);
  return format.type;
}

/** Where a media item's bytes live among the app's assets. */
export function mediaAssetKey(id: string, type: string): string {
  return `${TEMPLATE_MEDIA_PREFIX}${id}.${SIGNATURES.find((s) => s.type === type)?.ext ?? "bin"}`;
}
