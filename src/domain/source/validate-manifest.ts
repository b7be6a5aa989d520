import { apiError, type ErrorKind } from "../../errors/index.ts";
import { normalizeIcon } from "./icon.ts";
import type { LiteralValue } from "./manifest.ts";
import { CAPABILITY_IMPORTS, type CapabilityImport, type Capabilities, type Manifest, type RouteSpec } from "./manifest-types.ts";
import { schemaBounds, SchemaCostError } from "../../schemas/index.ts";

export const MANIFEST_ID_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const MANIFEST_ID_MAX = 64;
export const OPERATION_ID_PATTERN = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;
const DISPLAY_NAME_MAX = 100;
const VERSION_MAX = 64;
export const DESCRIPTION_MAX = 500;
// A host name, an IPv4 literal or a bracketed IPv6 literal; egress decides which addresses are reachable.
const ORIGIN_PATTERN = /^https:\/\/(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;
const ROUTE_KEYS = new Set(["title", "description", "access", "input", "output"]);
const CAPABILITY_KEYS = new Set(["imports", "exports", "origins"]);

type Obj = { [key: string]: LiteralValue };

/**
 * Checks an extracted manifest against the spec's table and DECISIONS §3 and applies defaults.
 * Every refusal is a 400 whose message and `details.path` name the offending place; an invalid
 * icon is not a refusal but a warning.
 */
export function validateManifest(raw: LiteralValue): { manifest: Manifest; warnings: string[] } {
  const m = object(raw, "manifest", "invalid_manifest_schema");
  const id = m.id;
  if (typeof id !== "string" || id.length > MANIFEST_ID_MAX || !MANIFEST_ID_PATTERN.test(id)) {
    fail("invalid_manifest_schema", "manifest.id", `must be a short kebab-case string (${MANIFEST_ID_PATTERN.source}, at most ${MANIFEST_ID_MAX} characters)`);
  }
  const version = optionalString(m.version, "manifest.version", VERSION_MAX);
  const displayName = optionalString(m.displayName, "manifest.displayName", DISPLAY_NAME_MAX);
  const description = optionalString(m.description, "manifest.description", Number.POSITIVE_INFINITY);
  if (description !== null && description.length > DESCRIPTION_MAX) {
    throw apiError("description_too_long", `manifest.description is ${description.length} characters; the cap is ${DESCRIPTION_MAX}`, {
      details: { path: "manifest.description" },
    });
  }
  const routes = validateRoutes(m.routes);
  const capabilities = validateCapabilities(m.capabilities, Object.keys(routes));
  const { icon, warning } = normalizeIcon(m.icon);
  return {
    manifest: { id, version, displayName: displayName ?? id, description, icon, capabilities, routes },
    warnings: warning === null ? [] : [warning],
  };
}

/**
 * What all of a manifest's route schemas may hold together, so one write's compile (in the
 * schema worker: ajv about 0.1 ms a node, RE2 about 0.25 ms a pattern) stays short and others'
 * writes do not queue long behind it. schemas/cost.ts bounds each schema alone; the compile
 * itself happens in prepareSource (route-schemas.ts).
 */
export const MANIFEST_SCHEMA_NODES = 1024;
export const MANIFEST_SCHEMA_PATTERNS = 64;

/**
 * Operations one app may declare. Every describe, agent.json and per-app MCP request lays out
 * each of them (the MCP server is made per request: a tool each), so thousands in one anonymous
 * app's manifest made every such request cost tens of milliseconds of Node's one thread.
 */
export const MAX_OPERATIONS = 256;

function validateRoutes(raw: LiteralValue | undefined): Record<string, RouteSpec> {
  if (raw === undefined || raw === null) return {};
  const routes = object(raw, "manifest.routes", "invalid_routes_shape");
  const count = Object.keys(routes).length;
  if (count > MAX_OPERATIONS) fail("invalid_routes_shape", "manifest.routes", `declares ${count} operations; an app declares at most ${MAX_OPERATIONS}`);
  const out: Record<string, RouteSpec> = {};
  const total = { nodes: 0, patterns: 0 };
  for (const [op, value] of Object.entries(routes)) {
    const path = `manifest.routes.${op}`;
    if (!OPERATION_ID_PATTERN.test(op)) fail("invalid_routes_shape", path, `is not a valid operation id (${OPERATION_ID_PATTERN.source})`);
    const route = object(value, path, "invalid_routes_shape");
    for (const key of Object.keys(route)) {
      if (!ROUTE_KEYS.has(key)) fail("invalid_routes_shape", `${path}.${key}`, "is not a route field (title, description, access, input, output)");
    }
    const access = route.access ?? "write";
    if (access !== "read" && access !== "write") fail("invalid_routes_shape", `${path}.access`, 'must be "read" or "write"');
    out[op] = {
      title: optionalString(route.title, `${path}.title`, 200, "invalid_routes_shape"),
      description: optionalString(route.description, `${path}.description`, 2000, "invalid_routes_shape"),
      access,
      input: routeSchema(route.input, `${path}.input`, total),
      output: routeSchema(route.output, `${path}.output`, total),
    };
  }
  return out;
}

function routeSchema(raw: LiteralValue | undefined, path: string, total: { nodes: number; patterns: number }): LiteralValue | null {
  if (raw === undefined || raw === null) return null;
  try {
    // Counted before compiling: a manifest past the totals never reaches ajv.
    const bounds = schemaBounds(raw);
    total.nodes += bounds.nodes;
    total.patterns += bounds.patterns;
    if (total.nodes > MANIFEST_SCHEMA_NODES) throw new SchemaCostError(`the manifest's route schemas hold more than ${MANIFEST_SCHEMA_NODES} subschemas in all`);
    if (total.patterns > MANIFEST_SCHEMA_PATTERNS) throw new SchemaCostError(`the manifest's route schemas hold more than ${MANIFEST_SCHEMA_PATTERNS} patterns in all`);
  } catch (error) {
    if (!(error instanceof SchemaCostError)) throw error;
    fail("invalid_route_schema", path, `cannot be checked in bounded time: ${error.message}`);
  }
  return raw;
}

function validateCapabilities(raw: LiteralValue | undefined, routeKeys: string[]): Capabilities {
  const caps = raw === undefined || raw === null ? {} : object(raw, "manifest.capabilities", "invalid_manifest_schema");
  for (const key of Object.keys(caps)) {
    if (!CAPABILITY_KEYS.has(key)) fail("invalid_manifest_schema", `manifest.capabilities.${key}`, "is not a capability field (imports, exports, origins)");
  }
  const imports = stringArray(caps.imports, "manifest.capabilities.imports").map((value, i) => {
    if (!(CAPABILITY_IMPORTS as readonly string[]).includes(value)) {
      fail("invalid_manifest_schema", `manifest.capabilities.imports[${i}]`, `must be one of ${CAPABILITY_IMPORTS.join(", ")}`);
    }
    return value as CapabilityImport;
  });
  const origins = stringArray(caps.origins, "manifest.capabilities.origins").map((value, i) => {
    if (!ORIGIN_PATTERN.test(value) || !isExactOrigin(value)) {
      fail("invalid_manifest_schema", `manifest.capabilities.origins[${i}]`, "must be an exact origin https://host[:port] with no path, wildcard or trailing slash");
    }
    return value;
  });
  let exports = routeKeys;
  if (caps.exports !== undefined && caps.exports !== null) {
    const declared = stringArray(caps.exports, "manifest.capabilities.exports");
    const a = new Set(declared);
    const b = new Set(routeKeys);
    const missing = routeKeys.filter((k) => !a.has(k));
    const extra = declared.filter((k) => !b.has(k));
    if (missing.length > 0 || extra.length > 0 || a.size !== declared.length) {
      throw apiError(
        "invalid_manifest_exports",
        `manifest.capabilities.exports must list exactly the keys of manifest.routes` +
          (extra.length > 0 ? `; not routes: ${extra.join(", ")}` : "") +
          (missing.length > 0 ? `; routes not listed: ${missing.join(", ")}` : "") +
          (a.size !== declared.length ? "; it lists an operation twice" : ""),
        { details: { path: "manifest.capabilities.exports", extra, missing } },
      );
    }
    exports = declared;
  }
  return { imports: [...new Set(imports)], exports, origins: [...new Set(origins)] };
}

function isExactOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value;
  } catch {
    return false;
  }
}

function object(raw: LiteralValue | undefined, path: string, kind: ErrorKind): Obj {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return fail(kind, path, "must be an object");
  return raw;
}

function optionalString(raw: LiteralValue | undefined, path: string, max: number, kind: ErrorKind = "invalid_manifest_schema"): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== "string") return fail(kind, path, "must be a string");
  if (raw.length > max) return fail(kind, path, `must be at most ${max} characters`);
  return raw;
}

function stringArray(raw: LiteralValue | undefined, path: string): string[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return fail("invalid_manifest_schema", path, "must be an array of strings");
  return raw.map((value, i) => (typeof value === "string" ? value : fail("invalid_manifest_schema", `${path}[${i}]`, "must be a string")));
}

function fail(kind: ErrorKind, path: string, problem: string): never {
  throw apiError(kind, `${path} ${problem}`, { details: { path } });
}
