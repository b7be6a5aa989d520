import { _, Ajv2020, type ErrorObject, type KeywordCxt, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import standaloneCode from "ajv/dist/standalone/index.js";
import { COST_KEYWORD, instrument, schemaBounds, type SchemaBounds } from "./cost.ts";
import { BudgetExceeded, metered } from "./meter.ts";
import { RUNTIME_MODULE, schemaRuntime } from "./runtime.ts";

/**
 * Work units one validation may take on Node's thread. A unit is about one keyword check; the
 * costliest schemas measured (anyOf fan-out with patterns) spend ~25 ms on a full budget.
 */
export const VALIDATION_BUDGET = 1_000_000;

export type CheckResult = { ok: true } | { ok: false; errors: ErrorObject[] } | { ok: false; tooCostly: true };

// How generated code names the runtime's functions (ref: the function, for ajv's own use).
const CHARGE = { ref: schemaRuntime.charge, code: _`require(${RUNTIME_MODULE}).charge` };
const DISTINCT = { ref: schemaRuntime.allDistinct, code: _`require(${RUNTIME_MODULE}).allDistinct` };

/**
 * The ajv every app schema is compiled with (in the compile worker): patterns in RE2, a linear
 * `uniqueItems`, and the cost keyword that charges the meter for each node applied, so no schema
 * and input can hold Node's thread past the budget. It emits standalone source, which Node's
 * thread loads without compiling anything itself (runtime.ts).
 * `strict: false` lets annotation keywords agents like to write through; `allErrors: false`
 * because every error is an object built outside the meter's view and anyOf fan-out can fail
 * thousands of branches; `optimize: false` because ajv's optimizer costs more than it saves here;
 * `logger: false` because a failed compile would log the whole generated function.
 */
export function appAjv(validateSchema: boolean): Ajv2020 {
  const ajv = new Ajv2020({
    strict: false,
    allErrors: false,
    validateSchema,
    addUsedSchema: false,
    // A key is present when the value has it, not its prototype: {} has no "toString" to check,
    // and "__proto__" required is not met by every object.
    ownProperties: true,
    logger: false,
    code: { source: true, optimize: false, regExp: Object.assign(schemaRuntime.re2, { code: `require(${JSON.stringify(RUNTIME_MODULE)}).re2` }) },
  });
  addFormats.default(ajv);
  ajv.addKeyword({
    keyword: COST_KEYWORD,
    schemaType: "number",
    code(cxt: KeywordCxt) {
      const charge = cxt.gen.scopeValue("func", CHARGE);
      cxt.gen.code(_`${charge}(${cxt.schema as number})`);
    },
  });
  // ajv's own uniqueItems compares objects pairwise (quadratic in the array's length).
  ajv.removeKeyword("uniqueItems");
  ajv.addKeyword({
    keyword: "uniqueItems",
    type: "array",
    schemaType: "boolean",
    error: { message: "must NOT have duplicate items" },
    code(cxt: KeywordCxt) {
      if (cxt.schema !== true) return;
      const distinct = cxt.gen.scopeValue("func", DISTINCT);
      cxt.fail(_`!${distinct}(${cxt.data})`);
    },
  });
  return ajv;
}

/** Standalone validator source for an app schema after checking its bounds; throws why not. */
export function compileAppSchemaSource(ajv: Ajv2020, schema: unknown): { source: string; bounds: SchemaBounds } {
  if (typeof schema !== "boolean" && (typeof schema !== "object" || schema === null || Array.isArray(schema))) {
    throw new Error("a JSON Schema must be an object or a boolean");
  }
  const bounds = schemaBounds(schema);
  const validate = ajv.compile(instrument(schema) as object | boolean);
  return { source: standaloneCode.default(ajv, validate), bounds };
}

/** Validates within VALIDATION_BUDGET; past it the value is refused as too costly to check. */
export function checkValue(validate: ValidateFunction, value: unknown): CheckResult {
  try {
    return metered(VALIDATION_BUDGET, () => validate(value)) ? { ok: true } : { ok: false, errors: validate.errors ?? [] };
  } catch (error) {
    // A schema whose references recurse past the stack before the budget runs out (one the
    // write-time check missed) costs too much too; the thread's stack is whole again here.
    if (error instanceof BudgetExceeded || error instanceof RangeError) return { ok: false, tooCostly: true };
    throw error;
  }
}
