import type { ManifestRename } from "./manifest-types.ts";
import { manifestObject, propertyName } from "./manifest.ts";
import { prepareSourceNow, type PreparedSource, type SourceBundle } from "./source.ts";

/** Manifest fields a copy may set: the new app's id and display name. */
export type { ManifestRename };

/**
 * The module with `manifest.id` and `manifest.displayName` set to new literals, everything else
 * byte for byte: each value is replaced where it stands, or inserted first in the object when
 * the manifest lacks it. Works on the parse tree, never on text patterns, so a string that
 * merely looks like `id: "x"` elsewhere in the module is left alone. CPU-bound: runs off-thread
 * (offthread/jobs.ts) through `prepareRenamed`.
 */
export function rewriteManifest(module: string, rename: ManifestRename): string {
  const object = manifestObject(module);
  const edits: { start: number; end: number; text: string }[] = [];
  for (const [key, value] of Object.entries(rename)) {
    if (value === undefined) continue;
    const literal = JSON.stringify(value);
    const property = object.properties.find((p) => p.type === "Property" && propertyName(p) === key);
    if (property?.type === "Property") edits.push({ start: property.value.start, end: property.value.end, text: literal });
    else edits.push({ start: object.start + 1, end: object.start + 1, text: ` ${key}: ${literal},` });
  }
  let out = module;
  for (const edit of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  return out;
}

/** A copy's source: renamed, then every check of a source write (prepareSourceNow). */
export function prepareRenamedNow(source: SourceBundle, rename: ManifestRename): PreparedSource {
  return prepareSourceNow({ ...source, module: rewriteManifest(source.module, rename) });
}
