/**
 * What an app's JSON Schema may hold, checked when the app is written: no reference cycle that
 * never descends into the input (validation would recurse forever), references only within the
 * schema, at most MAX_SCHEMA_NODES nodes MAX_SCHEMA_DEPTH deep, and at most MAX_EXPANSION
 * weighted nodes applied to one value through allOf/anyOf/oneOf/$ref. What a schema and an input cost together cannot be told
 * in advance (fan-out multiplies as validation descends), so validation is also metered as it
 * runs (meter.ts, instrument() below) and stops at a budget.
 */

/**
 * Schema nodes one schema may hold, and how deep they may nest: ajv compiles on Node's thread at
 * about 0.1 ms a node (superlinear past a few hundred, and past ~1,000 nested levels its code
 * generator overflows the stack), so these caps bound what one compile can cost.
 */
export const MAX_SCHEMA_NODES = 256;
export const MAX_SCHEMA_DEPTH = 32;
/** Weighted schema nodes that may apply to one input value. */
export const MAX_EXPANSION = 256;

const PATTERN_WEIGHT = 16;

// Keywords whose subschemas apply to the same value as their parent (no descent into the input).
const SAME_VALUE_LIST = ["allOf", "anyOf", "oneOf"] as const;
const SAME_VALUE_ONE = ["not", "if", "then", "else"] as const;
const SAME_VALUE_MAP = ["dependentSchemas"] as const;
// Keywords whose subschemas apply to the value's children, or only through a $ref.
const CHILD_ONE = ["additionalProperties", "propertyNames", "items", "contains", "unevaluatedItems", "unevaluatedProperties", "additionalItems"] as const;
const CHILD_MAP = ["properties", "patternProperties", "$defs", "definitions"] as const;
const CHILD_LIST = ["prefixItems", "items"] as const;

type Node = Record<string, unknown>;

export interface SchemaBounds {
  /** The most weighted schema nodes that apply to one value through allOf/anyOf/oneOf/$ref. */
  expansion: number;
  /** Schema nodes, and patterns (each compiled into RE2), for a manifest's totals. */
  nodes: number;
  patterns: number;
}

/** Why a schema is refused. */
export class SchemaCostError extends Error {
  override name = "SchemaCostError";
}

/** Bounds of a schema, or a SchemaCostError saying why its validation cost has no bound. */
export function schemaBounds(schema: unknown): SchemaBounds {
  if (typeof schema === "boolean") return { expansion: 1, nodes: 1, patterns: 0 };
  const nodes = new Map<string, Node>();
  const anchors = new Map<string, string>();
  collect(schema, "#", nodes, anchors);
  const memo = new Map<string, number>();
  const visiting = new Set<string>();

  const expand = (pointer: string): number => {
    const known = memo.get(pointer);
    if (known !== undefined) return known;
    if (visiting.has(pointer)) throw new SchemaCostError(`${pointer} refers back to itself without descending into the input, so validating it never ends`);
    const node = nodes.get(pointer);
    if (node === undefined) return 1;
    visiting.add(pointer);
    let total = weight(node);
    for (const child of sameValueChildren(node, pointer, anchors)) {
      total += expand(child);
      if (total > MAX_EXPANSION) {
        throw new SchemaCostError(`${pointer} applies more than ${MAX_EXPANSION} weighted subschemas to one value (nested allOf/anyOf/oneOf/$ref multiply)`);
      }
    }
    visiting.delete(pointer);
    memo.set(pointer, total);
    return total;
  };

  let expansion = 1;
  let patterns = 0;
  for (const [pointer, node] of nodes) {
    expansion = Math.max(expansion, expand(pointer));
    if (typeof node.pattern === "string") patterns += 1;
    if (typeof node.patternProperties === "object" && node.patternProperties !== null) patterns += Object.keys(node.patternProperties).length;
  }
  return { expansion, nodes: nodes.size, patterns };
}

/** Name of the keyword that charges each application of a schema node to the meter. */
export const COST_KEYWORD = "x-brickyard-cost";

/**
 * A copy of `schema` in which every schema node carries its weight under COST_KEYWORD, so that
 * each time validation applies a node it pays for what that node checks (meter.ts).
 */
export function instrument(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const copy: Node = {};
  const node = schema as Node;
  for (const [key, value] of Object.entries(node)) copy[key] = SUBSCHEMA_KEYS.has(key) ? instrumentChildren(key, value) : value;
  copy[COST_KEYWORD] = weight(node);
  return copy;
}

const SUBSCHEMA_KEYS = new Set<string>([...SAME_VALUE_LIST, ...SAME_VALUE_ONE, ...SAME_VALUE_MAP, ...CHILD_ONE, ...CHILD_MAP, ...CHILD_LIST]);

function instrumentChildren(key: string, value: unknown): unknown {
  if (Array.isArray(value)) return (SAME_VALUE_LIST as readonly string[]).includes(key) || (CHILD_LIST as readonly string[]).includes(key) ? value.map(instrument) : value;
  if ((SAME_VALUE_MAP as readonly string[]).includes(key) || (CHILD_MAP as readonly string[]).includes(key)) {
    if (typeof value !== "object" || value === null) return value;
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, instrument(item)]));
  }
  return instrument(value);
}

function collect(value: unknown, pointer: string, nodes: Map<string, Node>, anchors: Map<string, string>, depth = 0): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return;
  if (depth > MAX_SCHEMA_DEPTH) throw new SchemaCostError(`it nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  const node = value as Node;
  nodes.set(pointer, node);
  if (nodes.size > MAX_SCHEMA_NODES) throw new SchemaCostError(`it has more than ${MAX_SCHEMA_NODES} subschemas`);
  // A nested $id starts a new base for every reference under it; app schemas keep one document.
  if (pointer !== "#" && node.$id !== undefined) throw new SchemaCostError(`${pointer} has an $id; only the root of a route schema may`);
  if (typeof node.$anchor === "string") anchors.set(node.$anchor, pointer);
  if (typeof node.$dynamicAnchor === "string") anchors.set(node.$dynamicAnchor, pointer);
  const at = (key: string) => `${pointer}/${escape(key)}`;
  for (const key of [...SAME_VALUE_ONE, ...CHILD_ONE]) collect(node[key], at(key), nodes, anchors, depth + 1);
  for (const key of [...SAME_VALUE_LIST, ...CHILD_LIST]) {
    const list = node[key];
    if (Array.isArray(list)) list.forEach((item, i) => collect(item, `${at(key)}/${i}`, nodes, anchors, depth + 1));
  }
  for (const key of [...SAME_VALUE_MAP, ...CHILD_MAP]) {
    const map = node[key];
    if (typeof map === "object" && map !== null && !Array.isArray(map)) {
      for (const [name, item] of Object.entries(map)) collect(item, `${at(key)}/${escape(name)}`, nodes, anchors, depth + 1);
    }
  }
}

function sameValueChildren(node: Node, pointer: string, anchors: Map<string, string>): string[] {
  const out: string[] = [];
  const at = (key: string) => `${pointer}/${escape(key)}`;
  for (const key of SAME_VALUE_ONE) if (node[key] !== undefined) out.push(at(key));
  for (const key of SAME_VALUE_LIST) {
    const list = node[key];
    if (Array.isArray(list)) list.forEach((_, i) => out.push(`${at(key)}/${i}`));
  }
  for (const key of SAME_VALUE_MAP) {
    const map = node[key];
    if (typeof map === "object" && map !== null) for (const name of Object.keys(map)) out.push(`${at(key)}/${escape(name)}`);
  }
  for (const key of ["$ref", "$dynamicRef"]) {
    const ref = node[key];
    if (typeof ref !== "string") continue;
    if (!ref.startsWith("#")) throw new SchemaCostError(`${pointer} refers to ${JSON.stringify(ref)}; only references within the schema (#…) are allowed`);
    out.push(resolve(ref, anchors));
  }
  return out;
}

/** A local reference (`#/…` pointer or `#anchor`) as the pointer of the node it names. */
function resolve(ref: string, anchors: Map<string, string>): string {
  if (ref === "#" || ref.startsWith("#/")) {
    try {
      return decodeURIComponent(ref);
    } catch {
      throw new SchemaCostError(`${JSON.stringify(ref)} is not a valid reference`);
    }
  }
  const anchored = anchors.get(ref.slice(1));
  // Unresolved here, ajv would look the name up again at each validation ($dynamicRef falls back
  // to the root): a loop this check would never see.
  if (anchored === undefined) throw new SchemaCostError(`${JSON.stringify(ref)} names no anchor in the schema`);
  return anchored;
}

function escape(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** One node's own work per value it is applied to: its keyword lists count, not just the node. */
function weight(node: Node): number {
  // A pattern test in RE2 costs about as much as a few dozen plain keyword checks.
  let w = typeof node.pattern === "string" ? 1 + PATTERN_WEIGHT : 1;
  for (const key of ["required", "enum", "prefixItems"]) if (Array.isArray(node[key])) w += (node[key] as unknown[]).length;
  for (const key of ["properties", "patternProperties", "dependentRequired"]) {
    const map = node[key];
    if (typeof map === "object" && map !== null) w += Object.keys(map).length * (key === "patternProperties" ? PATTERN_WEIGHT : 1);
  }
  // enum and const compare whole values: their size counts, in 64-character steps.
  for (const key of ["enum", "const"]) if (node[key] !== undefined) w += Math.ceil((JSON.stringify(node[key])?.length ?? 0) / 64);
  return w;
}
