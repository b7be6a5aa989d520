/** Timer-driven calls of one declared op of an app (spec: Routine). Removed with the app. */
export interface RoutinesTable {
  /** `routine_<uuid>`. */
  id: string;
  app_id: string;
  op: string;
  interval: "hourly" | "daily" | "weekly";
  /** 0 or 1. */
  enabled: number;
  disabled_reason: "owner" | "auto" | null;
  /** The schedule, kept while disabled (the API shows null then) so re-enabling restores it. */
  next_run_at: number;
  last_run_at: number | null;
  last_outcome: "success" | "failure" | null;
  /** JSON `{kind, message}` of the last failed run. */
  last_error: string | null;
  consecutive_failures: number;
  /** Slots skipped because the service was not ticking when they came due. */
  missed_runs: number;
  created_at: number;
  updated_at: number;
}
