import { sql, type Kysely } from "kysely";
import { ApiError } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import type { LastError } from "./views.ts";

/** Spec Limits: "Routine auto-disable: 5 consecutive tick failures". */
export const AUTO_DISABLE_AFTER = 5;

/** What a run answered: the op's envelope, as `POST /routines/{id}/run` returns it. */
export type RunEnvelope = { ok: true; value: unknown } | { ok: false; error: LastError };

/** Turns whatever a run threw into the `{kind, message}` kept in `last_error`. */
export function failureOf(error: unknown): LastError {
  if (error instanceof ApiError) return { kind: error.kind, message: error.message };
  return { kind: "internal_error", message: "the run failed on our side; it has been logged" };
}

/**
 * Records a tick's outcome. A failure bumps the counter in the same statement (so concurrent runs
 * cannot lose a count) and the fifth in a row disables the routine with reason `auto`.
 */
export async function recordRun(db: Kysely<Database>, id: string, now: number, failure: LastError | null): Promise<void> {
  if (failure === null) {
    await db
      .updateTable("routines")
      .set({ last_run_at: now, last_outcome: "success", last_error: null, consecutive_failures: 0, updated_at: now })
      .where("id", "=", id)
      .execute();
    return;
  }
  await db
    .updateTable("routines")
    .set({
      last_run_at: now,
      last_outcome: "failure",
      last_error: JSON.stringify(failure),
      consecutive_failures: sql<number>`consecutive_failures + 1`,
      updated_at: now,
    })
    .where("id", "=", id)
    .execute();
  await db
    .updateTable("routines")
    .set({ enabled: 0, disabled_reason: "auto", updated_at: now })
    .where("id", "=", id)
    .where("enabled", "=", 1)
    .where("consecutive_failures", ">=", AUTO_DISABLE_AFTER)
    .execute();
}
