import { parse, type ClassBody, type Expression, type Node, type ObjectExpression, type Program, type Property, type SpreadElement } from "acorn";
import { apiError } from "../../errors/index.ts";

/** A JSON value read out of the module's source text. */
export type LiteralValue = string | number | boolean | null | LiteralValue[] | { [key: string]: LiteralValue };

/**
 * Reads `export const manifest = { … }` out of an ES module without running any of it
 * (DECISIONS §3), and checks the module has a default export with a `fetch` function.
 * Returns the manifest as plain data; validating it is validate-manifest.ts's job.
 */
export function extractManifest(source: string, program = parseModule(source)): LiteralValue {
  const declarations = topLevelDeclarations(program);
  const exports = exportedBindings(program);

  const manifestNode = exports.get("manifest");
  if (manifestNode === undefined) {
    throw apiError("invalid_module", "the module must export its manifest: `export const manifest = { id: \"…\", … }`");
  }
  const manifestInit = manifestNode.kind === "expression" ? manifestNode.node : declarations.get(manifestNode.name);
  if (manifestInit === undefined) {
    throw apiError("invalid_manifest_schema", "manifest must be a `const` initialised with a literal object", { details: { path: "manifest" } });
  }
  const manifest = toLiteral(manifestInit, "manifest");

  const entry = exports.get("default");
  const entryNode = entry === undefined ? undefined : entry.kind === "expression" ? entry.node : declarations.get(entry.name);
  if (entryNode === undefined || !hasFetch(entryNode, declarations)) {
    throw apiError("invalid_module", "the module must have a default export with a fetch function: `export default { async fetch(request, env) { … } }`");
  }
  return manifest;
}

/**
 * The module's syntax tree: 400 invalid_module if it does not parse. Nodes carry offsets, not
 * lines and columns: tracking those made a parse of real code ~20 % slower, and only an import's
 * refusal names its line (scanImports finds it from the offset).
 */
export function parseModule(source: string): Program {
  try {
    return parse(source, { ecmaVersion: 2024, sourceType: "module" });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw apiError("invalid_module", `module does not parse as an ES module: ${message}`);
  }
}

/**
 * The manifest's `{ … }` in a module `extractManifest` accepted: where a copy rewrites its id
 * and display name (manifest-rewrite.ts). Throws the same refusals for any other module.
 */
export function manifestObject(source: string): ObjectExpression {
  const program = parseModule(source);
  extractManifest(source, program);
  const found = exportedBindings(program).get("manifest");
  const node = found === undefined ? undefined : found.kind === "expression" ? found.node : topLevelDeclarations(program).get(found.name);
  if (node?.type !== "ObjectExpression") throw apiError("invalid_manifest_schema", "manifest must be a literal object", { details: { path: "manifest" } });
  return node as ObjectExpression;
}

type Exported = { kind: "expression"; node: Node } | { kind: "binding"; name: string };

/** Initialisers of top-level `const` bindings, plus function and class declarations by name. */
function topLevelDeclarations(program: Program): Map<string, Node> {
  const out = new Map<string, Node>();
  for (const statement of program.body) {
    const declaration = statement.type === "ExportNamedDeclaration" ? statement.declaration : statement;
    if (declaration === null || declaration === undefined) continue;
    if (declaration.type === "VariableDeclaration" && declaration.kind === "const") {
      for (const d of declaration.declarations) {
        if (d.id.type === "Identifier" && d.init !== null && d.init !== undefined) out.set(d.id.name, d.init);
      }
    } else if ((declaration.type === "FunctionDeclaration" || declaration.type === "ClassDeclaration") && declaration.id !== null) {
      out.set(declaration.id.name, declaration);
    }
  }
  return out;
}

/** Exported names mapped to what they export: an expression in place, or a local binding. */
function exportedBindings(program: Program): Map<string, Exported> {
  const out = new Map<string, Exported>();
  for (const statement of program.body) {
    if (statement.type === "ExportDefaultDeclaration") {
      out.set("default", { kind: "expression", node: statement.declaration });
    } else if (statement.type === "ExportNamedDeclaration") {
      const declaration = statement.declaration;
      if (declaration?.type === "VariableDeclaration") {
        for (const d of declaration.declarations) {
          if (d.id.type !== "Identifier") continue;
          // Only `const` is a literal we can trust: `let` could be reassigned before anyone reads it.
          if (declaration.kind === "const" && d.init !== null && d.init !== undefined) out.set(d.id.name, { kind: "expression", node: d.init });
          else out.set(d.id.name, { kind: "binding", name: d.id.name });
        }
      }
      if (statement.source === null || statement.source === undefined) {
        for (const s of statement.specifiers) {
          const exported = s.exported.type === "Identifier" ? s.exported.name : String(s.exported.value);
          const local = s.local.type === "Identifier" ? s.local.name : String(s.local.value);
          out.set(exported, { kind: "binding", name: local });
        }
      }
    }
  }
  return out;
}

function hasFetch(node: Node, declarations: Map<string, Node>, depth = 0): boolean {
  if (depth > 4) return false;
  switch (node.type) {
    case "Identifier": {
      const target = declarations.get((node as Node & { name: string }).name);
      return target !== undefined && hasFetch(target, declarations, depth + 1);
    }
    case "ObjectExpression": {
      const properties = (node as Node & { properties: (Property | SpreadElement)[] }).properties;
      return properties.some((p) => p.type === "Property" && propertyName(p) === "fetch" && isCallable(p.value, declarations));
    }
    case "ClassDeclaration":
    case "ClassExpression": {
      const body = (node as Node & { body: ClassBody }).body;
      return body.body.some((m) => m.type === "MethodDefinition" && !m.static && m.key.type === "Identifier" && m.key.name === "fetch");
    }
    default:
      return false;
  }
}

function isCallable(value: Node, declarations: Map<string, Node>): boolean {
  if (value.type === "FunctionExpression" || value.type === "ArrowFunctionExpression") return true;
  if (value.type === "Identifier") {
    const target = declarations.get((value as Node & { name: string }).name);
    return target !== undefined && (target.type === "FunctionDeclaration" || isCallable(target, declarations));
  }
  return false;
}

export function propertyName(p: Property): string | null {
  if (p.computed) return null;
  if (p.key.type === "Identifier") return p.key.name;
  if (p.key.type === "Literal" && (typeof p.key.value === "string" || typeof p.key.value === "number")) return String(p.key.value);
  return null;
}

/** Converts a literal expression to data; anything computed is refused with the path it sits at. */
function toLiteral(node: Node, path: string): LiteralValue {
  const refuse = (what: string, at: string = path): never => {
    throw apiError("invalid_manifest_schema", `${at} must be a literal (object, array, string, number, boolean or null), not ${what}`, {
      details: { path: at },
    });
  };
  const expression = node as Expression;
  switch (expression.type) {
    case "Literal": {
      const value = expression.value;
      if (typeof value === "string" || typeof value === "boolean" || value === null) {
        if ("regex" in expression && expression.regex !== undefined) return refuse("a regular expression");
        return value;
      }
      // JSON, where the manifest is kept, has no Infinity: 1e999 would be stored as null.
      if (typeof value === "number") return Number.isFinite(value) ? value : refuse("a number too large for JSON");
      return refuse(typeof value === "bigint" ? "a BigInt" : "a regular expression");
    }
    case "TemplateLiteral":
      if (expression.expressions.length > 0) return refuse("a template with ${…} substitutions");
      return expression.quasis.map((q) => q.value.cooked ?? "").join("");
    case "UnaryExpression":
      if (expression.operator === "-" && expression.argument.type === "Literal" && typeof expression.argument.value === "number") {
        return Number.isFinite(expression.argument.value) ? -expression.argument.value : refuse("a number too large for JSON");
      }
      return refuse(`a ${expression.operator} expression`);
    case "ArrayExpression":
      return expression.elements.map((element, i) => {
        if (element === null) return refuse("an array with holes");
        if (element.type === "SpreadElement") return refuse("a spread (...)");
        return toLiteral(element, `${path}[${i}]`);
      });
    case "ObjectExpression": {
      const entries: [string, LiteralValue][] = [];
      for (const p of expression.properties) {
        if (p.type === "SpreadElement") return refuse("an object with a spread (...)");
        const key = propertyName(p);
        if (key === null) return refuse("an object with a computed key");
        const at = `${path}.${key}`;
        if (p.kind !== "init" || p.method) return refuse("a getter, setter or method", at);
        if (p.shorthand) return refuse(`a reference to the variable ${key}`, at);
        // JavaScript keeps the last of a repeated key; a rewrite of the first (a copy's manifest
        // id) would then change nothing. Said once, a key means one thing.
        if (entries.some(([seen]) => seen === key)) {
          throw apiError("invalid_manifest_schema", `${at} is given more than once; give each key once`, { details: { path: at } });
        }
        entries.push([key, toLiteral(p.value, at)]);
      }
      // fromEntries defines own properties, so a "__proto__" key stays data and cannot set a prototype.
      return Object.fromEntries(entries);
    }
    case "Identifier":
      if (expression.name === "undefined") return refuse("undefined");
      return refuse(`a reference to the variable ${expression.name}`);
    default:
      return refuse(`an expression of type ${expression.type}`);
  }
}
