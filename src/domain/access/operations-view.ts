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
 * An operation id as an MCP tool name (`^[a-z0-9_]{1,40}$`): lower-cased, other characters as
 * `_`, cut to 40; a name two ids share gets the next free `_2`, `_3`… suffix.
 */
export function toolNames(ids: readonly string[]): Map<string, string> {
  const taken = new Set<string>();
  const names = new Map<string, string>();
  for (const id of ids) {
    const base = id.toLowerCase().replace(/[^a-z0-9_]/g, "_").slice(0, 40) || "op";
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base.slice(0, 40 - String(n).length - 1)}_${n}`;
    taken.add(name);
    names.set(id, name);
  }
  return names;
}
