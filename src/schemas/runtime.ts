import { createRequire } from "node:module";
import type { ValidateFunction } from "ajv/dist/2020.js";
import { re2Engine } from "./engine.ts";
import { charge } from "./meter.ts";

/**
 * What compiled app validators call at run time: the meter, RE2 and the linear uniqueItems.
 * Generated code reaches them as `require("brickyard:schema-runtime")` (see app-ajv.ts).
 */
export const RUNTIME_MODULE = "brickyard:schema-runtime";

// Building canonical text costs several keyword checks per value.
const CANONICAL_UNITS = 20;

export const schemaRuntime = {
  charge,
  re2: re2Engine,
  /** JSON equality as JSON Schema defines it, by canonical text (object keys sorted). */
  allDistinct: (items: unknown[]): boolean => {
    const seen = new Set<string>();
    for (const item of items) {
      const text = canonical(item);
      if (seen.has(text)) return false;
      seen.add(text);
    }
    return true;
  },
};

function canonical(value: unknown): string {
  charge(CANONICAL_UNITS);
  if (typeof value === "string") charge(value.length >> 2);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

const nodeRequire = createRequire(import.meta.url);
// ajv's standalone code requires its own runtime helpers and ajv-formats' formats; nothing else.
const ALLOWED = [/^ajv\/dist\/runtime\/[a-z0-9_]+$/, /^ajv-formats\/dist\/formats$/];

function runtimeRequire(name: string): unknown {
  if (name === RUNTIME_MODULE) return schemaRuntime;
  if (ALLOWED.some((pattern) => pattern.test(name))) return nodeRequire(name);
  throw new Error(`a compiled schema may not require ${JSON.stringify(name)}`);
}

/**
 * Turns ajv standalone source (CommonJS) into the validator. The source is ajv's output for a
 * schema, never text an app wrote: ajv escapes every schema string it embeds.
 */
export function loadValidator(source: string): ValidateFunction {
  const module = { exports: {} as { default?: ValidateFunction } };
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- see above: ajv's generated code
  const evaluate = new Function("require", "module", "exports", source) as (r: typeof runtimeRequire, m: typeof module, e: object) => void;
  evaluate(runtimeRequire, module, module.exports);
  const validate = module.exports.default;
  if (typeof validate !== "function") throw new Error("compiled schema source exports no validator");
  return validate;
}
