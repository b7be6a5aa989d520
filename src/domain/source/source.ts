import { apiError, recovery, type ErrorKind, type ShrinkField } from "../../errors/index.ts";
import { scanImports, type ModuleImports } from "../builds/imports.ts";
import { checkCdnScripts } from "./cdn-check.ts";
import { extractManifest, parseModule } from "./manifest.ts";
import type { Manifest, ManifestRename } from "./manifest-types.ts";
import { OffThread } from "../../offthread/index.ts";
import { checkRouteSchemas } from "./route-schemas.ts";
import { checkUiCalls } from "./ui-check.ts";
import { validateManifest } from "./validate-manifest.ts";

export const SOURCE_CAP_BYTES = 256 * 1024;

/** The three source buckets of an app. */
export interface SourceBundle {
  module: string;
  ui: string | null;
  styles: string | null;
}

export interface PreparedSource {
  source: SourceBundle;
  manifest: Manifest;
  /** Non-blocking feedback: icon problems, UI calls to undeclared operations. */
  warnings: string[];
  sizeBytes: number;
  /** Its `npm:` and `node:` imports: any npm import means a build before it can run. */
  imports: ModuleImports;
  /** The bundle it runs (build_bundles' input digest), once its npm imports are built. */
  build?: string;
}

/**
 * Everything a source write checks before it touches the store, in the off-thread worker: a
 * 256 KiB module takes acorn ~120 ms and its route schemas take ajv hundreds more, which on
 * Node's thread would stall every other request. Refusals arrive as the same ApiErrors.
 */
export function prepareSource(source: SourceBundle, worker = OffThread.shared): Promise<PreparedSource> {
  return worker.run<PreparedSource>({ type: "prepare", source });
}

/** As `prepareSource`, after setting the manifest's id and display name (a copy; manifest-rewrite.ts). */
export function prepareRenamed(source: SourceBundle, rename: ManifestRename, worker = OffThread.shared): Promise<PreparedSource> {
  return worker.run<PreparedSource>({ type: "prepare-renamed", source, rename });
}

/**
 * The checks themselves, in the order ARCHITECTURE.md's "Source write" flow gives: size caps,
 * parse, literal manifest, manifest rules, route schemas compiled, UI check. CPU-bound: call
 * through prepareSource (offthread/jobs.ts runs this).
 */
export function prepareSourceNow(source: SourceBundle): PreparedSource {
  const moduleBytes = capped(source.module, "module", "module_too_large");
  const uiBytes = source.ui === null ? 0 : capped(source.ui, "ui", "ui_too_large");
  // The spec names no kind for oversized styles; the generic size refusal with a shrink hint fits.
  const stylesBytes = source.styles === null ? 0 : capped(source.styles, "styles", "payload_too_large");
  checkCdnScripts(source.ui);
  const program = parseModule(source.module);
  const { manifest, warnings } = validateManifest(extractManifest(source.module, program));
  const imports = scanImports(program, source.module);
  checkRouteSchemas(manifest.routes);
  return {
    source,
    manifest,
    warnings: [...warnings, ...checkUiCalls(source.ui, manifest)],
    sizeBytes: moduleBytes + uiBytes + stylesBytes,
    imports,
  };
}

function capped(text: string, field: ShrinkField, kind: ErrorKind): number {
  const size = Buffer.byteLength(text, "utf8");
  if (size > SOURCE_CAP_BYTES) {
    throw apiError(kind, `${field} is ${size} bytes; the cap is ${SOURCE_CAP_BYTES} bytes (256 KiB)`, {
      limit: SOURCE_CAP_BYTES,
      recovery: recovery.shrink(field, size, SOURCE_CAP_BYTES),
    });
  }
  return size;
}
