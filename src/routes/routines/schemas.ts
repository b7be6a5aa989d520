import { Type } from "typebox";
import { NullableTimestamp, Timestamp } from "../../http/schemas.ts";

const LastError = Type.Union([Type.Object({ kind: Type.String(), message: Type.String() }), Type.Null()]);

export const RoutineId = Type.Object({ id: Type.String({ maxLength: 100 }) });
export const AppIdParams = Type.Object({ appId: Type.String({ maxLength: 100 }) });

/** Spec: Routine, plus `missed_runs` and `created_at`. */
export const RoutineSchema = Type.Object({
  id: Type.String({ description: "routine_<uuid>" }),
  app_id: Type.String({ format: "uuid" }),
  op: Type.String(),
  interval: Type.String({ enum: ["hourly", "daily", "weekly"] }),
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([Type.String({ enum: ["owner", "auto"] }), Type.Null()]),
  next_run_at: NullableTimestamp,
  last_run_at: NullableTimestamp,
  last_outcome: Type.Union([Type.String({ enum: ["success", "failure"] }), Type.Null()]),
  last_error: LastError,
  consecutive_failures: Type.Integer({ minimum: 0 }),
  missed_runs: Type.Integer({ minimum: 0, description: "slots skipped because no tick ran while they were due" }),
  created_at: Timestamp,
});

export const RoutineLimits = Type.Object({
  plan: Type.String({ enum: ["free", "pro", "business", "enterprise"] }),
  routines_per_app: Type.Integer(),
  routines_per_owner: Type.Integer(),
  used: Type.Integer({ minimum: 0 }),
});

// `interval` is a plain string here so a bad value reaches the domain and gets its own kind
// (400 `invalid_interval`) instead of a generic validation failure.
export const IntervalField = Type.String({ description: "hourly, daily or weekly", maxLength: 40 });
