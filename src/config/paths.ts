import { join } from "node:path";

/**
 * Where the files Brickyard reads beside its own code are. Run from its sources, this module is
 * src/config/paths.ts and the tree is src/; compiled (scripts/build.mjs), every module is bundled
 * into files at the top of dist/, and the tree is dist/, holding copies of the same files at the
 * same places. The repository's docs/ is beside either.
 */
const fromSources = import.meta.url.endsWith("/config/paths.ts");
const TREE = fromSources ? join(import.meta.dirname, "..") : import.meta.dirname;

/** A file or folder of the tree, named as it is under src/ (`runtime/executor/workers`, `web/sdk/sdk.js`). */
export function inTree(path: string): string {
  return join(TREE, path);
}

/** A file of the repository's docs/ (the authoring guide). */
export function inDocs(path: string): string {
  return join(TREE, "..", "docs", path);
}

/** The off-thread worker's entry: compiled, its own bundle; from sources, a small file that loads it through tsx. */
export const THREAD_ENTRY = fromSources ? inTree("start/jobs.thread.js") : inTree("thread.js");
