// Compiles src/ to dist/, so that `npm start` and the `brickyard` command run no TypeScript
// loader (tsx stays for tests and `npm run dev`). esbuild bundles the CLI and the off-thread
// worker, with the pure-JavaScript packages they use, into a few files at the top of dist/:
// loading ~900 small modules one by one was most of a process's start (measured: 520 ms to import
// the server as one module per source file, 170 ms as a bundle). Packages with native parts, that
// load files of their own at run time, or that are imported only when needed stay in
// node_modules. The files read from disk beside the code (the workers that run inside workerd,
// the browser SDK) are copied to the same places under dist/ (src/config/paths.ts).
// `node scripts/build.mjs` builds; `--if-stale` builds only when a source is newer than dist/.
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SRC = join(ROOT, "src");
export const DIST = join(ROOT, "dist");
/** Written last: its time is the build's, and its absence means there is no complete build. */
const STAMP = join(DIST, ".built");
/** Read from disk beside their modules at run time (executor.ts, launch.ts, web/sdk/files.ts). */
const COPIED = ["runtime/executor/workers", "runtime/executor/launcher", "web/sdk"];

/** Whether dist/ is missing, unfinished, or older than a source file or this script. */
export function stale() {
  if (!existsSync(STAMP)) return true;
  const built = statSync(STAMP).mtimeMs;
  /** @param {string} path */
  const newer = (path) => statSync(path).mtimeMs > built;
  if (newer(fileURLToPath(import.meta.url)) || newer(join(ROOT, "package.json"))) return true;
  return readdirSync(SRC, { recursive: true }).some((file) => newer(join(SRC, String(file))));
}

/** Native code, files read at run time, optional native parts, or imported only when needed. */
const EXTERNAL = [
  "better-sqlite3",
  "@node-rs/argon2",
  "esbuild",
  "workerd",
  "pg",
  "pino",
  "pino-pretty",
  "@aws-sdk/*",
  "nodemailer",
  "tar",
  "@modelcontextprotocol/*",
  "oidc-provider",
];

export async function build() {
  const { build: esbuild } = await import("esbuild");
  const out = `${DIST}.tmp-${process.pid}`;
  rmSync(out, { recursive: true, force: true });
  await esbuild({
    absWorkingDir: ROOT,
    // dist/brickyard.js runs the CLI with its arguments (`node dist/brickyard.js serve`).
    entryPoints: { brickyard: "src/start/run.ts", thread: "src/start/thread.ts" },
    outdir: out,
    bundle: true,
    splitting: true,
    chunkNames: "[name]-[hash]",
    external: EXTERNAL,
    platform: "node",
    format: "esm",
    target: "node20",
    // The CommonJS packages bundled in call require() for Node's built-ins.
    banner: { js: 'import { createRequire as __brickyardRequire } from "node:module"; const require = __brickyardRequire(import.meta.url);' },
    sourcemap: "linked",
    logLevel: "warning",
  });
  for (const dir of COPIED) cpSync(join(SRC, dir), join(out, dir), { recursive: true, filter: (path) => !path.endsWith(".ts") });
  // A copy of dist/ is a complete program beside a node_modules: it says its modules are ES modules.
  writeFileSync(join(out, "package.json"), `${JSON.stringify({ type: "module", private: true })}\n`);
  writeFileSync(join(out, ".built"), `${new Date().toISOString()}\n`);
  // Swapped in whole: a process starting meanwhile finds the old build or the new one, not half of one.
  const old = `${DIST}.old-${process.pid}`;
  if (existsSync(DIST)) renameSync(DIST, old);
  renameSync(out, DIST);
  rmSync(old, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!process.argv.includes("--if-stale") || stale()) {
    mkdirSync(dirname(DIST), { recursive: true });
    const started = performance.now();
    await build();
    console.warn(`built dist/ from src/ in ${Math.round(performance.now() - started)} ms`);
  }
}
