/** Terminal or not, where a build job stands (spec "States and transitions → Build"). */
export type BuildState = "queued" | "resolving" | "building" | "validating" | "published" | "failed" | "superseded" | "canceled" | "expired";

export type BuildIntent = "create" | "update" | "migrate" | "restore" | "copy";

/** One durable build job: the source it publishes and how far it got. */
export interface BuildsTable {
  id: string;
  app_id: string;
  intent: BuildIntent;
  state: BuildState;
  /** JSON of the writer's Actor (`null` for an anonymous create), checked again at publish. */
  actor: string;
  idempotency_key: string | null;
  /** A copy's plan (JSON of CopyPlan): its source, whether data comes too; null for other intents. */
  copy: string | null;
  /** The revision the publish replaces (compare-and-set); null for a create. */
  base_revision: number | null;
  module: string;
  ui: string | null;
  styles: string | null;
  input_digest: string;
  prior_lock: string | null;
  /** JSON `{name: version}` of the module's direct imports, once resolved. */
  lock: string | null;
  lock_digest: string | null;
  /** JSON `{kind, message, retryable, details?}` of a failed build. */
  error: string | null;
  attempts: number;
  lease_holder: string | null;
  lease_until: number | null;
  /** The published revision. */
  revision: number | null;
  accepted_at: number;
  updated_at: number;
  finished_at: number | null;
  deadline: number;
}

/** A bundle by the digest of its input: any write of the same input publishes it at once. */
export interface BuildBundlesTable {
  input_digest: string;
  /** Empty when the bundle is an object in the blob store (`object_hash`, migration 031). */
  bundle: string;
  object_hash: string | null;
  /** JSON of the whole resolved graph: `{"name@version": integrity}` plus the direct `{name: version}`. */
  lock: string;
  lock_digest: string;
  node_builtins: number;
  size_bytes: number;
  /** When it was built, or last found by a write of its input (BuildQueue.bundled): the sweep's day of grace counts from it. */
  created_at: number;
}
