import { apiError } from "../../errors/index.ts";
import { compileSchemaSource, SchemaCostError } from "../../schemas/index.ts";
import type { RouteSpec } from "./manifest-types.ts";

/**
 * Compiles every route schema of a manifest (draft 2020-12, the meta-schema checked); the first
 * that cannot be used is a 400 `invalid_route_schema` naming its path. Runs where prepareSource
 * runs: in the off-thread worker. validateManifest has already checked each schema's bounds.
 */
export function checkRouteSchemas(routes: Record<string, RouteSpec>): void {
  for (const [op, route] of Object.entries(routes)) {
    for (const direction of ["input", "output"] as const) {
      const schema = route[direction];
      if (schema === undefined || schema === null) continue;
      const path = `manifest.routes.${op}.${direction}`;
      try {
        compileSchemaSource(schema, true);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        const bounded = !(error instanceof SchemaCostError || error instanceof RangeError);
        const problem = bounded ? `is not a valid JSON Schema (draft 2020-12): ${reason}` : `cannot be checked in bounded time: ${reason}`;
        throw apiError("invalid_route_schema", `${path} ${problem}`, { details: { path } });
      }
    }
  }
}
