import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { apiError } from "../../errors/index.ts";

/**
 * Compiled JSON Schemas (draft 2020-12) of app routes, per (app, revision, op, direction):
 * compiled once on first use, since a revision's schemas never change.
 */
export class RouteSchemas {
  private readonly ajv: Ajv2020;
  private readonly cache = new Map<string, ValidateFunction | null>();

  constructor(private readonly capacity = 5000) {
    this.ajv = new Ajv2020({ allErrors: true, strict: false, validateSchema: false });
    addFormats.default(this.ajv);
  }

  /** The validator for a schema, or null when the route declares none. */
  get(cacheKey: string, schema: unknown): ValidateFunction | null {
    const hit = this.cache.get(cacheKey);
    if (hit !== undefined) return hit;
    let compiled: ValidateFunction | null = null;
    if (schema !== undefined && schema !== null) {
      try {
        compiled = this.ajv.compile(schema);
      } catch (error) {
        // The manifest validator rejects such schemas at publish time; this is a safety net.
        throw apiError("invalid_route_schema", `the route schema does not compile: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    this.cache.set(cacheKey, compiled);
    if (this.cache.size > this.capacity) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return compiled;
  }
}

/** 400 `unexpected_keys` when the only complaint is undeclared keys, else 400 `invalid_input`. */
export function inputError(errors: ErrorObject[]): never {
  const extra = errors.filter((e) => e.keyword === "additionalProperties" || e.keyword === "unevaluatedProperties");
  const details = errors.map((e) => ({ path: e.instancePath, keyword: e.keyword, message: e.message ?? "", params: e.params }));
  if (extra.length > 0) {
    const keys = extra.map((e) => {
      const params = e.params as { additionalProperty?: string; unevaluatedProperty?: string };
      return `${e.instancePath}/${params.additionalProperty ?? params.unevaluatedProperty ?? ""}`.replace(/^\//, "");
    });
    throw apiError("unexpected_keys", `the input has keys the operation does not declare: ${keys.join(", ")}`, { details: { keys, errors: details } });
  }
  throw apiError("invalid_input", `the input does not match the operation's schema: ${details.map((d) => `${d.path || "/"} ${d.message}`).join("; ")}`, {
    details: { errors: details },
  });
}
