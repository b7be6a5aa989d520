import { appAjv, compileAppSchemaSource } from "./app-ajv.ts";

// Built on first use, in the worker that compiles (offthread/): two ajvs, with and without the
// meta-schema pass (writes check it; calls trust what was written).
let withMeta: ReturnType<typeof appAjv> | null = null;
let withoutMeta: ReturnType<typeof appAjv> | null = null;

/**
 * Standalone validator source of an app schema. CPU-bound: it runs off Node's main thread
 * (offthread/jobs.ts). Throws SchemaCostError, or ajv's reason when the schema is invalid.
 */
export function compileSchemaSource(schema: unknown, meta = false): string {
  const ajv = meta ? (withMeta ??= appAjv(true)) : (withoutMeta ??= appAjv(false));
  try {
    return compileAppSchemaSource(ajv, schema).source;
  } finally {
    // Every app's schema is independent; nothing compiled stays in the ajv.
    ajv.removeSchema();
  }
}
