import { ApiError } from "../errors/index.ts";
import { SchemaCostError } from "../schemas/cost.ts";

// What crosses back from the worker. Kept apart from jobs.ts, which imports the checks
// themselves, so the pool on the main thread loads none of them.

/** A refusal as it crosses the thread boundary (structured clone keeps no classes). */
export type JobError =
  | { type: "api"; kind: ApiError["kind"]; message: string; fields: ApiError["fields"]; status: number; headers: Record<string, string> }
  | { type: "unbounded" | "error"; message: string };

export type Reply = { ok: true; value: unknown } | { ok: false; error: JobError };

/** The error a job's caller sees, rebuilt on the main thread. */
export function deserialize(error: JobError): Error {
  if (error.type === "api") return new ApiError(error.kind, error.message, error.fields, { status: error.status, headers: error.headers });
  return error.type === "unbounded" ? new SchemaCostError(error.message) : new Error(error.message);
}
