// A package's packument as a build reads it, parsed in the worker thread (start/jobs.ts): the
// registry's answer may be tens of MiB of JSON, and parsing it on Node's thread stalled every
// request for seconds.

/** Versions a packument may list; the most of any package on npmjs is in the low thousands. */
export const MAX_VERSIONS = 20_000;

/** One published version as a packument lists it: what resolution and fetching need. */
export interface PackumentVersion {
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  dist: { tarball: string; integrity?: string };
}

export interface Packument {
  name: string;
  "dist-tags"?: Record<string, string>;
  versions: Record<string, PackumentVersion>;
  /** Publication times by version (full packuments only). */
  time?: Record<string, string>;
}

/** The worker's answer: the packument as resolution reads it, or why it is refused. */
export type Parsed = { packument: Packument } | { refused: "invalid" | "versions" | "unavailable"; detail: string };

/** Runs in the worker: the registry's bytes to what resolution reads of them. */
export function parsePackumentNow(body: Uint8Array): Parsed {
  let doc: Packument;
  try {
    doc = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8")) as Packument;
  } catch (error) {
    return { refused: "invalid", detail: (error as Error).message };
  }
  if (typeof doc !== "object" || doc === null || typeof doc.versions !== "object" || doc.versions === null) return { refused: "invalid", detail: "no versions" };
  const count = Object.keys(doc.versions).length;
  if (count > MAX_VERSIONS) return { refused: "versions", detail: String(count) };
  return { packument: slim(doc) };
}

/**
 * What resolution reads of a packument, and nothing else: a package's full document can run to
 * tens of MiB (readmes, every version's manifest), and a build holds each one it fetched until
 * it ends. (Structured clone gives back plain objects: readers look keys up with Object.hasOwn.)
 */
function slim(doc: Packument): Packument {
  const versions: Record<string, PackumentVersion> = {};
  for (const [key, v] of Object.entries(doc.versions)) {
    if (typeof v !== "object" || v === null) continue;
    versions[key] = {
      version: v.version,
      ...(v.dependencies === undefined ? {} : { dependencies: v.dependencies }),
      ...(v.optionalDependencies === undefined ? {} : { optionalDependencies: v.optionalDependencies }),
      dist: { tarball: v.dist?.tarball, ...(v.dist?.integrity === undefined ? {} : { integrity: v.dist.integrity }) },
    };
  }
  const tags: Record<string, string> = { ...doc["dist-tags"] };
  const time = doc.time === undefined ? undefined : { ...doc.time };
  return { name: doc.name, "dist-tags": tags, versions, ...(time === undefined ? {} : { time }) };
}
