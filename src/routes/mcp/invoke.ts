import type { FastifyInstance } from "fastify";
import { toolLayerHeaders } from "../../http/tool-layer.ts";
import type { ToolSpec } from "./tools.ts";
import type { Principal } from "../../http/auth.ts";
import { apiError } from "../../errors/index.ts";
import { nestsDeeperThan } from "../../lib/json-depth.ts";

export type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[]; type?: string | string[] };

interface OpenApiOperation {
  summary?: string;
  parameters?: { name: string; in: string; required?: boolean; schema?: JsonSchema; description?: string }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

/** A tool's input schema and how its arguments become the REST request. */
export interface ToolBinding {
  spec: ToolSpec;
  inputSchema: JsonSchema;
  pathParams: string[];
  queryParams: string[];
}

/**
 * The input schema of each tool, taken from the REST route's own schemas in the OpenAPI
 * document the server generates (path and query parameters and the body's properties, side by
 * side), so a tool accepts exactly what its route does.
 */
export function bindTools(app: FastifyInstance, specs: readonly ToolSpec[]): ToolBinding[] {
  const document = app.swagger() as { paths?: Record<string, Record<string, OpenApiOperation>> };
  return specs.map((spec) => {
    const openApiPath = spec.path.replace(/:([A-Za-z]+)/g, "{$1}");
    const operation = document.paths?.[openApiPath]?.[spec.method.toLowerCase()];
    if (operation === undefined) throw new Error(`MCP tool ${spec.name}: no route ${spec.method} ${spec.path}`);
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    const pathParams: string[] = [];
    const queryParams: string[] = [];
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in !== "path" && parameter.in !== "query") continue;
      if (parameter.in === "query" && spec.hiddenQuery?.includes(parameter.name) === true) continue;
      properties[parameter.name] = { ...(parameter.schema ?? { type: "string" }), ...(parameter.description === undefined ? {} : { description: parameter.description }) };
      if (parameter.in === "path") {
        pathParams.push(parameter.name);
        required.push(parameter.name);
      } else {
        queryParams.push(parameter.name);
        if (parameter.required === true) required.push(parameter.name);
      }
    }
    const body = operation.requestBody?.content?.["application/json"]?.schema;
    if (spec.bodyAsInput === true) {
      properties.input = { type: "object", description: "the operation's input, matching its input schema" };
    } else if (body?.properties !== undefined) {
      Object.assign(properties, body.properties);
      required.push(...(body.required ?? []));
    }
    return { spec, inputSchema: { type: "object", properties, ...(required.length > 0 ? { required } : {}) }, pathParams, queryParams };
  });
}

/** A path or query value as text; anything structured is sent as JSON, for the route to refuse. */
function scalar(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? String(value) : JSON.stringify(value);
}

/** The REST response a tool call produced. */
export interface Invoked {
  status: number;
  body: unknown;
}

type Caller = { authorization?: string; ip: string; principal?: Principal | null };

/**
 * Runs the tool's REST route as the MCP caller, in-process (Fastify's inject): the same bearer
 * token, the same client address for per-address limits, nothing else carried over. The route
 * learns it is the tool layer's (`toolLayerHeaders`): an op call is then an agent's, which waits
 * for a run slot rather than failing `app_busy` (SLOT_WAIT_MS; tool calls are not metered).
 */
export async function invoke(app: FastifyInstance, binding: ToolBinding, args: Record<string, unknown>, caller: Caller): Promise<Invoked> {
  let url = binding.spec.path;
  const rest: Record<string, unknown> = { ...args };
  for (const name of binding.pathParams) {
    const value = scalar(rest[name]);
    // encodeURIComponent keeps `.` and `..`, which the URL parser then resolves: `{id: ".."}`
    // would climb out of the tool's route into any other (POST /api/token, say).
    if (value === "" || value === "." || value === "..") return { status: 400, body: apiError("invalid_request", `${name} must be a non-empty id, not "${value}"`).toEnvelope() };
    url = url.replace(`:${name}`, encodeURIComponent(value));
    delete rest[name];
  }
  if (new URL(url, "http://tool.invalid").pathname !== url) return { status: 400, body: apiError("invalid_request", "the tool's arguments do not make a path of its route").toEnvelope() };
  const query = new URLSearchParams();
  for (const name of binding.queryParams) {
    if (rest[name] !== undefined) query.set(name, scalar(rest[name]));
    delete rest[name];
  }
  const payload = binding.spec.bodyAsInput === true ? (rest.input ?? {}) : rest;
  const hasBody = binding.spec.method !== "GET" && binding.spec.method !== "DELETE";
  const response = await app.inject({
    method: binding.spec.method,
    url: query.size > 0 ? `${url}?${query.toString()}` : url,
    remoteAddress: caller.ip,
    headers: {
      ...toolLayerHeaders(caller.principal?.kind === "user" && caller.principal.via === "oauth" ? caller.principal : undefined),
      ...(caller.authorization === undefined ? {} : { authorization: caller.authorization }),
      ...(hasBody ? { "content-type": "application/json" } : {}),
    },
    ...(hasBody ? { payload: JSON.stringify(payload) } : {}),
  });
  let body: unknown = response.body;
  try {
    body = response.body === "" ? null : (JSON.parse(response.body) as unknown);
  } catch {
    // Not JSON (a CSV, a page): the text is the answer.
  }
  return { status: response.statusCode, body };
}

/**
 * What a tool's arguments may be: any object, with values that arrived as JSON text where the
 * schema wants an object or array parsed first (agents often send them so). Everything else is
 * checked by the route, so a bad argument is refused with the route's own error kind.
 */
export function lenientArgs(schema: JsonSchema, value: unknown): Record<string, unknown> | null {
  if (typeof value === "string") {
    // JSON text inside the body was past the body's nesting check: it gets the same one here.
    if (nestsDeeperThan(value)) return null;
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      return null;
    }
  }
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) return null;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  // The schema may be an app's own (per-app MCP): read it defensively.
  const properties = schema.properties !== null && typeof schema.properties === "object" ? schema.properties : {};
  for (const [name, property] of Object.entries(properties)) {
    if (property === null || typeof property !== "object") continue;
    const wanted = property.type;
    const structured = wanted === "object" || wanted === "array" || (wanted === undefined && property.properties !== undefined);
    const given = out[name];
    // Text nested deeper than a body may be stays text, and the route refuses it for its type.
    if (structured && typeof given === "string" && !nestsDeeperThan(given)) {
      try {
        out[name] = JSON.parse(given) as unknown;
      } catch {
        // Left as sent: the route names the problem.
      }
    }
  }
  return out;
}
