import { iso } from "../../config/clock.ts";
import type { RoutinesTable } from "../../store/schema/routines.ts";

export interface LastError {
  kind: string;
  message: string;
}

/** A routine as the API shows it (spec: Routine), plus `missed_runs` (DECISIONS §8). */
export interface RoutineView {
  id: string;
  app_id: string;
  op: string;
  interval: RoutinesTable["interval"];
  enabled: boolean;
  disabled_reason: RoutinesTable["disabled_reason"];
  next_run_at: string | null;
  last_run_at: string | null;
  last_outcome: RoutinesTable["last_outcome"];
  last_error: LastError | null;
  consecutive_failures: number;
  missed_runs: number;
  created_at: string;
}

export function routineView(row: RoutinesTable): RoutineView {
  const enabled = Number(row.enabled) === 1;
  return {
    id: row.id,
    app_id: row.app_id,
    op: row.op,
    interval: row.interval,
    enabled,
    disabled_reason: row.disabled_reason,
    // The schedule is kept while disabled and shows again on enable (spec: Routine states).
    next_run_at: enabled ? iso(Number(row.next_run_at)) : null,
    last_run_at: row.last_run_at === null ? null : iso(Number(row.last_run_at)),
    last_outcome: row.last_outcome,
    last_error: row.last_error === null ? null : (JSON.parse(row.last_error) as LastError),
    consecutive_failures: Number(row.consecutive_failures),
    missed_runs: Number(row.missed_runs),
    created_at: iso(Number(row.created_at)),
  };
}
