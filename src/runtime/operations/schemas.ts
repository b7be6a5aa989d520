import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import { apiError } from "../../errors/index.ts";
import { VALIDATION_BUDGET } from "../../schemas/index.ts";
import { Validators } from "./validators.ts";

/**
 * Validators of app routes, per (app, revision, op, direction): compiled once on first use off
 * Node's thread (a revision's schemas never change), kept here by key.
 */
export class RouteSchemas {
  private readonly cache = new Map<string, ValidateFunction | null>();

  constructor(
    private readonly capacity = 5000,
    private readonly validators = Validators.shared,
  ) {}

  /** The validator for a schema, or null when the route declares none. */
  async get(cacheKey: string, schema: unknown): Promise<ValidateFunction | null> {
    const hit = this.cache.get(cacheKey);
    if (hit !== undefined) return hit;
    let compiled: ValidateFunction | null = null;
    if (schema !== undefined && schema !== null) {
      try {
        compiled = await this.validators.of(schema);
      } catch (error) {
        // The manifest check refuses such schemas when the app is written; this is a safety net.
        throw apiError("invalid_route_schema", `the route schema cannot be used: ${error instanceof Error ? error.message : String(error)}`);
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

/** Why a value was refused when checking it would have run past the work budget (schemas/meter.ts). */
export const TOO_COSTLY = `checking it against the schema takes more than ${VALIDATION_BUDGET.toLocaleString("en")} work units (about one per keyword checked); send less or simplify the schema`;

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
