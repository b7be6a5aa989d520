import type { Icon } from "./icon.ts";
import type { LiteralValue } from "./manifest.ts";

export const CAPABILITY_IMPORTS = ["svc:storage/kv@1.0", "svc:storage/blob@1.0", "svc:logging/emit@1.0"] as const;
export type CapabilityImport = (typeof CAPABILITY_IMPORTS)[number];

/** One declared operation (`manifest.routes[op]`), defaults applied. */
export interface RouteSpec {
  title: string | null;
  description: string | null;
  access: "read" | "write";
  /** JSON Schema (draft 2020-12) of the input; null when undeclared (any object is accepted). */
  input: LiteralValue | null;
  output: LiteralValue | null;
}

export interface Capabilities {
  imports: CapabilityImport[];
  /** The operation ids; always equal to the keys of `routes`. */
  exports: string[];
  /** Exact `https://host[:port]` origins the backend may fetch. */
  origins: string[];
}

/**
 * A validated manifest with every default applied: what is stored (apps.manifest and
 * app_versions.manifest as JSON) and what every other part of Brickyard reads.
 */
export interface Manifest {
  id: string;
  version: string | null;
  /** `manifest.displayName`, or the id when omitted. */
  displayName: string;
  description: string | null;
  /** The manifest's icon after normalisation; null when omitted or invalid (the brick). */
  icon: Icon | null;
  capabilities: Capabilities;
  routes: Record<string, RouteSpec>;
}

/** A copy's new manifest id and display name, written into its module (manifest-rewrite.ts). */
export interface ManifestRename {
  id?: string;
  displayName?: string;
}
