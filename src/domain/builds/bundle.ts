import { realpath } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import * as esbuild from "esbuild";
import { BuildError } from "./build-error.ts";
import { NODE_BUILTINS } from "./imports.ts";

export const BUNDLE_CAP_BYTES = 8 * 1024 * 1024;

const NPM = /^npm:((?:@[^/@]+\/)?[^/@]+)(?:@[^/]+)?(\/.*)?$/;
// What CommonJS packages `require`: a built-in by its bare name or with `node:`.
const BUILTIN = /^(?:node:)?([a-z_]+(?:\/[a-z_]+)?)$/;

export interface Bundle {
  code: string;
  /** The `node:` built-ins it imports; the isolate needs nodejs_compat when there are any. */
  nodeBuiltins: string[];
}

/**
 * One ES module out of the app's module and the packages unpacked under `root/node_modules`:
 * `npm:name@range/sub` resolves to `name/sub` there, `node:*` stays external, conditions are the
 * Workers ones. A CommonJS `require` of a built-in cannot run in workerd (there is no require),
 * so each one becomes a top-level import that a small `require` put in front of the bundle returns.
 */
export async function bundleModule(module: string, root: string): Promise<Bundle> {
  const required = new Set<string>();
  const imported = new Set<string>();
  const packages = await realpath(join(root, "node_modules")).catch(() => null);
  const plugin: esbuild.Plugin = {
    name: "brickyard",
    setup(build) {
      // Every file the bundle reads must be one of its unpacked packages': esbuild follows any
      // path a package (or the app's own `require`) names, and `../../../../secrets.key` from a
      // package's folder is the control plane's secrets key. Resolved for real, so no link leads out.
      build.onLoad({ filter: /.*/, namespace: "file" }, async (args) => {
        const real = await realpath(args.path).catch(() => null);
        if (packages !== null && real !== null && real.startsWith(packages + sep)) return undefined;
        const inside = relative(root, args.path);
        const named = inside.startsWith("..") || inside.startsWith(sep) || inside === "" ? "a file outside its packages" : inside;
        return { errors: [{ text: `the bundle may read only its packages' files, not ${named}` }] };
      });
      build.onResolve({ filter: /^npm:/ }, async (args) => {
        const match = NPM.exec(args.path);
        if (match === null) return { errors: [{ text: `cannot resolve ${args.path}` }] };
        const resolved = await build.resolve(`${match[1]}${match[2] ?? ""}`, { kind: args.kind, resolveDir: root });
        return resolved.errors.length > 0 ? { errors: resolved.errors } : { path: resolved.path };
      });
      build.onResolve({ filter: BUILTIN }, (args) => {
        const name = BUILTIN.exec(args.path)?.[1];
        // A package of that name in node_modules wins over the built-in, as in Node for non-prefixed names.
        if (name === undefined || !NODE_BUILTINS.has(name)) return undefined;
        if (!args.path.startsWith("node:") && args.kind !== "require-call") return undefined;
        if (args.kind === "require-call") required.add(name);
        else imported.add(name);
        return { path: `node:${name}`, external: true };
      });
    },
  };
  let result: esbuild.BuildResult<{ write: false }>;
  try {
    result = await esbuild.build({
      stdin: { contents: module, resolveDir: root, sourcefile: "app.js", loader: "js" },
      absWorkingDir: root,
      nodePaths: [],
      bundle: true,
      write: false,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      conditions: ["workerd", "worker", "browser"],
      mainFields: ["browser", "module", "main"],
      external: ["node:*"],
      plugins: [plugin],
      logLevel: "silent",
      legalComments: "none",
    });
  } catch (error) {
    throw failure(error);
  }
  const body = result.outputFiles[0]?.text ?? "";
  const code = requireShim(required) + body;
  if (Buffer.byteLength(code) > BUNDLE_CAP_BYTES) throw new BuildError("app_build_failed", `the bundle is ${Buffer.byteLength(code)} bytes; the cap is ${BUNDLE_CAP_BYTES} (8 MiB)`);
  return { code, nodeBuiltins: [...new Set([...required, ...imported])].sort().map((n) => `node:${n}`) };
}

/**
 * esbuild's `__require` calls a `require` in scope when there is one; this is that `require`,
 * answering for the built-ins the bundle's CommonJS code asks for and nothing else.
 */
function requireShim(required: Set<string>): string {
  if (required.size === 0) return "";
  const names = [...required].sort();
  const imports = names.map((name, i) => `import * as __brickyard_builtin_${i} from "node:${name}";`).join("\n");
  const table = names.map((name, i) => `${JSON.stringify(name)}: __brickyard_builtin_${i}.default ?? __brickyard_builtin_${i}`).join(", ");
  return `${imports}
const __brickyard_builtins = { ${table} };
function require(id) {
  const name = String(id).replace(/^node:/, "");
  if (Object.hasOwn(__brickyard_builtins, name)) return __brickyard_builtins[name];
  throw new Error("require(" + JSON.stringify(id) + ") is not supported");
}
`;
}

function failure(error: unknown): BuildError {
  const first = (error as { errors?: esbuild.Message[] }).errors?.[0];
  if (first === undefined) return new BuildError("app_build_failed", `the bundle failed: ${(error as Error).message}`);
  const inModule = first.location?.file === "app.js" || first.location?.file === "<stdin>";
  const specifier = /"(npm:[^"]+)"/.exec(first.text)?.[1] ?? (inModule ? /^npm:\S+/.exec(first.location?.lineText.match(/["'](npm:[^"']+)["']/)?.[1] ?? "")?.[0] : undefined);
  return new BuildError("app_build_failed", `the bundle failed: ${first.text}${first.location === null ? "" : ` (${first.location.file}:${first.location.line}:${first.location.column})`}`, {
    ...(specifier === undefined ? {} : { specifier }),
    ...(inModule && first.location !== null ? { line: first.location.line, column: first.location.column } : {}),
  });
}
