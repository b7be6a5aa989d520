import { describe, expect, it } from "vitest";
import { appAjv } from "../src/schemas/app-ajv.ts";
import { instrument } from "../src/schemas/cost.ts";
import { checkValue, compileSchemaSource, SchemaCostError } from "../src/schemas/index.ts";
import { loadValidator } from "../src/schemas/runtime.ts";

/** A route schema as calls check it: checked and compiled as when written, loaded as when called. */
const validator = (schema: unknown) => loadValidator(compileSchemaSource(schema));

describe("route schemas: what a value is checked against", () => {
  it("sees the value's own keys only, never its prototype's", () => {
    const optional = validator({ type: "object", properties: { toString: { type: "string" }, constructor: { type: "number" } } });
    expect(checkValue(optional, {})).toEqual({ ok: true });
    expect(checkValue(optional, { toString: 1 })).toMatchObject({ ok: false });
    const required = validator({ type: "object", required: ["__proto__", "constructor"] });
    expect(checkValue(required, {})).toMatchObject({ ok: false });
    expect(checkValue(required, JSON.parse('{"__proto__": 1, "constructor": 2}'))).toEqual({ ok: true });
  });

  it("refuses a reference to an anchor no node names, which ajv would resolve to a loop", () => {
    for (const schema of [{ $dynamicRef: "#x" }, { type: "object", properties: { v: { $ref: "#nowhere" } } }]) {
      expect(() => compileSchemaSource(schema)).toThrow(SchemaCostError);
    }
    expect(checkValue(validator({ $defs: { n: { $anchor: "n", type: "number" } }, $ref: "#n" }), 1)).toEqual({ ok: true });
  });

  it("reports a validation that overflows the stack as too costly, not as a crash", () => {
    // Compiled past the write-time check, as a schema stored before it could be.
    const looping = appAjv(false).compile(instrument({ $dynamicRef: "#x" }) as object);
    expect(checkValue(looping, {})).toEqual({ ok: false, tooCostly: true });
  });
});
