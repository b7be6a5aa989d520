import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { LiteralValue } from "./manifest.ts";

// One ajv for every app's route schemas. `strict: false` lets annotation keywords agents like to
// write (`example`, `x-…`) through; the draft 2020-12 meta-schema still rejects malformed schemas.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: true, addUsedSchema: false });
addFormats.default(ajv);

// Compiling costs about a millisecond per schema and apps are rewritten with the same schemas
// over and over, so compiled validators are kept by their JSON text (oldest dropped first).
const CACHE_MAX = 2000;
const cache = new Map<string, ValidateFunction>();

/**
 * The compiled validator of a route's `input` or `output` JSON Schema (draft 2020-12). Throws
 * ajv's error when the schema is not a valid schema; the executor uses the same function.
 */
export function compileRouteSchema(schema: LiteralValue): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  if (typeof schema !== "boolean" && (typeof schema !== "object" || schema === null || Array.isArray(schema))) {
    throw new Error("a JSON Schema must be an object or a boolean");
  }
  // Each app's schemas are independent: an `$id` must not collide with another app's.
  const compiled = ajv.compile(schema);
  cache.set(key, compiled);
  if (cache.size > CACHE_MAX) {
    const oldest = cache.keys().next();
    if (oldest.done !== true) cache.delete(oldest.value);
  }
  return compiled;
}
