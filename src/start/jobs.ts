import { parsePackumentNow, type Parsed } from "../domain/builds/packument.ts";
import { ApiError } from "../errors/index.ts";
import { prepareRenamedNow, type ManifestRename } from "../domain/source/manifest-rewrite.ts";
import { prepareSourceNow, type PreparedSource, type SourceBundle } from "../domain/source/source.ts";
import { compileSchemaSource } from "../schemas/compile.ts";
import { SchemaCostError } from "../schemas/cost.ts";
import type { JobError, Reply } from "../offthread/reply.ts";

/** Work that parses or compiles what an app wrote: CPU-bound, so never on Node's main thread. */
export type Job =
  | { type: "prepare"; source: SourceBundle }
  | { type: "prepare-renamed"; source: SourceBundle; rename: ManifestRename }
  | { type: "compile"; schema: unknown }
  | { type: "packument"; body: Uint8Array };

export type JobResult<J extends Job> = J extends { type: "prepare" | "prepare-renamed" } ? PreparedSource : J extends { type: "packument" } ? Parsed : string;

/** Runs in the worker (thread.js). */
export function runJob(job: Job): Reply {
  try {
    if (job.type === "prepare") return { ok: true, value: prepareSourceNow(job.source) };
    if (job.type === "prepare-renamed") return { ok: true, value: prepareRenamedNow(job.source, job.rename) };
    if (job.type === "packument") return { ok: true, value: parsePackumentNow(job.body) };
    return { ok: true, value: compileSchemaSource(job.schema) };
  } catch (error) {
    return { ok: false, error: serialize(error) };
  }
}

function serialize(error: unknown): JobError {
  if (error instanceof ApiError) return { type: "api", kind: error.kind, message: error.message, fields: error.fields, status: error.status, headers: error.headers };
  const message = error instanceof Error ? error.message : String(error);
  // A stack overflow in ajv's code generator is a schema too deep to compile: its cost, too.
  return { type: error instanceof SchemaCostError || error instanceof RangeError ? "unbounded" : "error", message };
}
