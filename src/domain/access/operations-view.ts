import type { AppRole } from "./access.ts";
import type { LiteralValue } from "../source/manifest.ts";
import type { Manifest } from "../source/manifest-types.ts";

/** One operation as describe, agent.json and per-app MCP show it. */
export interface OperationView {
  id: string;
  title: string | null;
  description: string | null;
  access: "read" | "write";
  input: LiteralValue | null;
  output: LiteralValue | null;
}

/**
 * The operations a role may run, which is what it is shown (DECISIONS §11): a viewer runs only
 * `read` operations (spec: Role meanings), everyone else who may open the app sees them all.
 */
export function visibleOperations(manifest: Manifest, role: AppRole): OperationView[] {
  return Object.entries(manifest.routes)
    .filter(([, route]) => role !== "viewer" || route.access === "read")
    .map(([id, r]) => ({ id, title: r.title, description: r.description, access: r.access, input: r.input, output: r.output }));
}

/**
 * Names no tool may take: the MCP SDK keeps tools in a plain object, where `constructor` is found
 * on its prototype and taken for a registered tool (so every request of the app failed).
 */
const RESERVED_NAMES: readonly string[] = Object.getOwnPropertyNames(Object.prototype);

/**
 * An operation id as an MCP tool name (`^[a-z0-9_]{1,40}$`): lower-cased, other characters as
 * `_`, cut to 40; a name two ids share gets the next free `_2`, `_3`… suffix. Each base name
 * remembers its next suffix, so thousands of ids sharing their first 40 characters cost linear
 * time, not the quadratic count from 2 that held the event loop for seconds per MCP request.
 */
export function toolNames(ids: readonly string[]): Map<string, string> {
  const taken = new Set<string>(RESERVED_NAMES);
  const nextSuffix = new Map<string, number>();
  const names = new Map<string, string>();
  for (const id of ids) {
    const base = id.toLowerCase().replace(/[^a-z0-9_]/g, "_").slice(0, 40) || "op";
    let name = base;
    if (taken.has(name)) {
      let n = nextSuffix.get(base) ?? 2;
      do name = `${base.slice(0, 40 - String(n).length - 1)}_${n++}`;
      while (taken.has(name));
      nextSuffix.set(base, n);
    }
    taken.add(name);
    names.set(id, name);
  }
  return names;
}
