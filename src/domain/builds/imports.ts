import type { Node, Program } from "acorn";
import semver from "semver";
import { apiError } from "../../errors/index.ts";

/** `npm:<name>[@range][/subpath]` as the module wrote it, with where. */
export interface NpmImport {
  specifier: string;
  name: string;
  /** The semver range; `latest` when the specifier names none. */
  range: string;
  /** `""` for the package's main entry, else `/sub/path`. */
  subpath: string;
  line: number;
  column: number;
}

/** What a module imports, found by parsing and never by running it (DECISIONS §10). */
export interface ModuleImports {
  npm: NpmImport[];
  /** The `node:` built-ins it imports, sorted; they need nodejs_compat in the isolate. */
  node: string[];
}

/**
 * The built-ins workerd (the pinned 1.20261023) serves under nodejs_compat. Anything else would
 * load nothing, or a stub that throws on first use, so it is refused at the write.
 */
export const NODE_BUILTINS: ReadonlySet<string> = new Set([
  "assert", "assert/strict", "async_hooks", "buffer", "crypto", "diagnostics_channel", "dns", "dns/promises",
  "events", "path", "path/posix", "path/win32", "process", "querystring", "stream", "stream/consumers",
  "stream/promises", "stream/web", "string_decoder", "timers", "timers/promises", "url", "util", "util/types", "zlib",
]);

const NPM_SPECIFIER = /^npm:((?:@[^/@]+\/)?[^/@]+)(?:@([^/]+))?(\/.*)?$/;
// npm's rules for a new package's name: an optional @scope/, lower case, URL-safe, at most 214.
const PACKAGE_NAME = /^(?:@[a-z0-9-*~][a-z0-9-*._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;

/**
 * Whether `name` may be a package's: the app's imports are held to it, and so is every name a
 * registry lists as a dependency, since each becomes a folder of the build (`node_modules/<name>`).
 */
export function isPackageName(name: string): boolean {
  return name.length <= 214 && PACKAGE_NAME.test(name);
}

/**
 * Every import of `program` (parsed from `source`), refusing the kinds no build can serve:
 * 400 app_build_unsupported.
 */
export function scanImports(program: Program, source: string): ModuleImports {
  const npm: NpmImport[] = [];
  const node = new Set<string>();
  const where = lineIndex(source);
  const computed = (offset: number): never => {
    const at = where(offset);
    throw apiError("app_build_unsupported", `import() of a computed specifier (line ${at.line}) can load nothing; import a literal npm:<name>@<version>`, { details: { line: at.line, column: at.column } });
  };
  visit(program, computed, (specifier, offset) => {
    if (specifier.startsWith("node:")) {
      const builtin = specifier.slice("node:".length);
      if (!NODE_BUILTINS.has(builtin)) throw unsupported(specifier, where(offset), `node:${builtin} is not a built-in this runtime serves; it has ${[...NODE_BUILTINS].map((b) => `node:${b}`).join(", ")}`);
      node.add(specifier);
      return;
    }
    const at = where(offset);
    if (specifier.startsWith("npm:")) {
      npm.push(parseNpm(specifier, at));
      return;
    }
    const hint = /^https?:/.test(specifier)
      ? "URL imports are not fetched; import the package from npm as npm:<name>@<version>"
      : specifier.startsWith(".") || specifier.startsWith("/")
        ? "an app is one module; put that code in it, or publish it as a package and import npm:<name>@<version>"
        : `a bare name resolves to nothing here; write npm:${specifier}@<version>`;
    throw unsupported(specifier, at, hint);
  });
  // In the order the module wrote them: the first of two conflicting imports is the one kept.
  npm.sort((a, b) => a.line - b.line || a.column - b.column);
  return { npm, node: [...node].sort() };
}

type Where = { line: number; column: number };

// acorn's line breaks (its `lineBreakG`, which its typings do not export).
const LINE_BREAK = /\r\n?|[\n\u2028\u2029]/g;

/**
 * Offset → line (from 1) and column (from 0), as acorn counts them (\r\n, \r, \n, U+2028 and
 * U+2029 end a line). The line starts are found once, on the first question: a module that
 * imports only built-ins it serves never asks.
 */
function lineIndex(source: string): (offset: number) => Where {
  let starts: number[] | null = null;
  return (offset) => {
    if (starts === null) {
      starts = [0];
      for (const match of source.matchAll(LINE_BREAK)) starts.push(match.index + match[0].length);
    }
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((starts[mid] ?? 0) <= offset) low = mid;
      else high = mid - 1;
    }
    return { line: low + 1, column: offset - (starts[low] ?? 0) };
  };
}

function parseNpm(specifier: string, at: Where): NpmImport {
  const match = NPM_SPECIFIER.exec(specifier);
  const name = match?.[1];
  if (match === null || name === undefined || !isPackageName(name)) {
    throw unsupported(specifier, at, "write npm:<name>[@<version range>][/<subpath>], e.g. npm:nanoid@5 or npm:date-fns@4/format");
  }
  const range = match[2] ?? "latest";
  if (range !== "latest" && semver.validRange(range) === null) throw unsupported(specifier, at, `${range} is not a semver range`);
  const subpath = match[3] ?? "";
  if (subpath.split("/").some((part) => part === ".." || part === ".")) throw unsupported(specifier, at, "a subpath may not contain . or .. segments");
  return { specifier, name, range, subpath, line: at.line, column: at.column };
}

function unsupported(specifier: string, at: Where, why: string) {
  return apiError("app_build_unsupported", `cannot import ${JSON.stringify(specifier)} (line ${at.line}): ${why}`, {
    details: { specifier, line: at.line, column: at.column },
  });
}

type Found = (specifier: string, offset: number) => void;

/** Static imports, re-exports and `import("…")`; a computed dynamic import can load nothing. */
function visit(root: Node, computed: (offset: number) => never, found: Found): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== "object") continue;
    if (Array.isArray(node)) {
      // Reversed onto the stack, so nodes come off it in source order: the first bad import is the one named.
      for (let i = node.length - 1; i >= 0; i--) stack.push(node[i]);
      continue;
    }
    const n = node as Node & { source?: Node | null };
    if (n.type === "ImportDeclaration" || n.type === "ExportAllDeclaration" || n.type === "ExportNamedDeclaration" || n.type === "ImportExpression") {
      const source = n.source;
      if (source !== null && source !== undefined) {
        if (source.type === "Literal" && typeof (source as { value?: unknown }).value === "string") found((source as unknown as { value: string }).value, source.start);
        else if (n.type === "ImportExpression") computed(source.start);
      }
    }
    const children = Object.entries(n).filter(([, value]) => value !== null && typeof value === "object");
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]?.[1]);
  }
}
