/** The source of every revision of an app; the executor loads code by (app_id, revision). */
export interface AppVersionsTable {
  app_id: string;
  revision: number;
  module: string;
  ui: string | null;
  styles: string | null;
  /** JSON of the normalized manifest extracted from `module`. */
  manifest: string;
  /** UTF-8 bytes of module + ui + styles. */
  size_bytes: number;
  created_at: number;
  /** The bundle this revision runs (build_bundles), when its module imports npm packages. */
  build_digest: string | null;
}
