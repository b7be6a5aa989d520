import type { Manifest } from "./manifest-types.ts";

// `svc.call("op"` and `window.svc.call('op'` with a literal name. A text scan rather than a parse:
// the UI is a classic script that may not parse on its own (templates, JSX-like strings), and the
// check only produces warnings, so an occasional miss costs nothing.
const CALL = /\bsvc\s*\.\s*call\s*\(\s*(["'`])([A-Za-z0-9_-]+)\1/g;

/**
 * The static UI/backend check run on every write (DECISIONS §3): each operation the UI names in
 * `svc.call("op")` must be declared in `manifest.routes`. Mismatches are warnings; the write stands.
 */
export function checkUiCalls(ui: string | null, manifest: Manifest): string[] {
  if (ui === null || ui === "") return [];
  const undeclared = new Set<string>();
  for (const match of ui.matchAll(CALL)) {
    const op = match[2];
    if (op !== undefined && !Object.hasOwn(manifest.routes, op)) undeclared.add(op);
  }
  return [...undeclared].map((op) => `the UI calls svc.call("${op}") but the manifest declares no route "${op}"; the call will fail with unknown_operation`);
}
