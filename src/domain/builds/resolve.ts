import semver from "semver";
import { BuildError } from "./build-error.ts";
import { isPackageName, type NpmImport } from "./imports.ts";
import type { Packument, PackumentVersion, Registry } from "./registry.ts";

export const PACKAGE_CAP = 300;

/** The exact versions of a module's direct imports, by name: what a later write keeps. */
export type DirectLock = Record<string, { range: string; version: string }>;

/** One package placed in the tree: `dir` is relative to the build's root, e.g. `node_modules/a/node_modules/b`. */
export interface Placed {
  name: string;
  version: PackumentVersion;
  dir: string;
  /** The import that brought it in, for error messages. */
  specifier: string;
}

export interface Resolution {
  direct: DirectLock;
  packages: Placed[];
}

interface TreeNode {
  dir: string;
  parent: TreeNode | null;
  children: Map<string, { node: TreeNode; version: string }>;
}

/**
 * Picks a version for every import and every dependency beneath, and lays them out as nested
 * node_modules directories the way Node's resolution reads them: a dependency goes as high in
 * the tree as nothing conflicting stands in the way, else into its dependent's own folder.
 * Direct imports whose range is the one `prior` was resolved for keep `prior`'s version.
 * `signal` (the build's deadline) ends it at its next request.
 */
export async function resolveImports(registry: Registry, imports: NpmImport[], prior: DirectLock, now: number, signal?: AbortSignal): Promise<Resolution> {
  const packuments = new Map<string, Promise<Packument>>();
  const packument = (name: string, specifier: string): Promise<Packument> => {
    let found = packuments.get(name);
    if (found === undefined) {
      found = registry.packument(name, specifier, signal);
      // A failed fetch is not cached: the caller's error ends this build anyway.
      packuments.set(name, found);
    }
    return found;
  };
  const root: TreeNode = { dir: "", parent: null, children: new Map() };
  const packages: Placed[] = [];
  // Keyed by package names, which may be `constructor`: no prototype to find it on.
  const direct: DirectLock = Object.create(null) as DirectLock;
  const queue: { node: TreeNode; deps: Record<string, string>; specifier: string }[] = [];

  const place = (parent: TreeNode, name: string, version: PackumentVersion, specifier: string): void => {
    if (packages.length >= PACKAGE_CAP) throw new BuildError("app_build_failed", `the imports need more than ${PACKAGE_CAP} packages`, { specifier });
    const dir = `${parent.dir === "" ? "" : `${parent.dir}/`}node_modules/${name}`;
    const node: TreeNode = { dir, parent, children: new Map() };
    parent.children.set(name, { node, version: version.version });
    packages.push({ name, version, dir, specifier });
    queue.push({ node, deps: { ...version.optionalDependencies, ...version.dependencies }, specifier });
  };

  for (const wanted of imports) {
    const existing = direct[wanted.name];
    if (existing !== undefined) {
      if (existing.range !== wanted.range) throw new BuildError("app_build_failed", `${wanted.name} is imported with two ranges (${existing.range}, ${wanted.range}); use one`, { specifier: wanted.specifier, line: wanted.line, column: wanted.column });
      continue;
    }
    const doc = await packument(wanted.name, wanted.specifier);
    const kept = Object.hasOwn(prior, wanted.name) ? prior[wanted.name] : undefined;
    const version = kept !== undefined && kept.range === wanted.range && Object.hasOwn(doc.versions, kept.version) ? kept.version : pick(doc, wanted.range, registry.minReleaseAgeMs, now);
    const chosen = version === null ? undefined : doc.versions[version];
    if (chosen === undefined) {
      throw new BuildError("app_build_failed", `no version of ${wanted.name} satisfies ${wanted.range}`, { specifier: wanted.specifier, line: wanted.line, column: wanted.column });
    }
    direct[wanted.name] = { range: wanted.range, version: chosen.version };
    place(root, wanted.name, chosen, wanted.specifier);
  }

  // Breadth first, so shallower dependents claim the higher places.
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const [name, range] of Object.entries(next.deps)) {
      // The registry names these, not the app: `../../x` would be a folder outside the build's.
      if (!isPackageName(name)) throw new BuildError("app_build_failed", `${next.node.dir} depends on ${JSON.stringify(name.slice(0, 240))}, which no npm package can be named`, { specifier: next.specifier });
      if (satisfiedFrom(next.node, name, range)) continue;
      const doc = await packument(name, next.specifier);
      const version = pick(doc, range, registry.minReleaseAgeMs, now);
      const chosen = version === null ? undefined : doc.versions[version];
      if (chosen === undefined) throw new BuildError("app_build_failed", `no version of ${name} satisfies ${range} (a dependency of ${next.node.dir})`, { specifier: next.specifier });
      place(placeFor(next.node, name), name, chosen, next.specifier);
    }
  }
  return { direct, packages };
}

/** Whether Node, resolving `name` from inside `node`, finds a version satisfying `range`. */
function satisfiedFrom(node: TreeNode, name: string, range: string): boolean {
  for (let at: TreeNode | null = node; at !== null; at = at.parent) {
    const found = at.children.get(name);
    if (found !== undefined) return semver.satisfies(found.version, range, { includePrerelease: false }) || range === "latest";
  }
  return false;
}

/**
 * Where `name` goes for a dependent at `node`: the root when nothing on the way up holds it (a
 * new root entry changes no one's resolution: whoever needed another version has it nearer),
 * else the dependent's own folder, since any place higher would shadow the holder for others.
 */
function placeFor(node: TreeNode, name: string): TreeNode {
  for (let at: TreeNode | null = node; at !== null; at = at.parent) {
    if (at.children.has(name)) return node;
  }
  let root = node;
  while (root.parent !== null) root = root.parent;
  return root;
}

/** The highest version satisfying `range` (or its dist-tag) old enough to be trusted. */
function pick(doc: Packument, range: string, minAgeMs: number, now: number): string | null {
  const tags = doc["dist-tags"] ?? {};
  const tagged = Object.hasOwn(tags, range) ? tags[range] : undefined;
  const eligible = Object.keys(doc.versions).filter((v) => minAgeMs <= 0 || isOldEnough(doc, v, minAgeMs, now));
  if (tagged !== undefined && eligible.includes(tagged)) return tagged;
  const effective = range === "latest" || range === "" || range === "*" ? "*" : range;
  if (tagged !== undefined) {
    // The tag points at a version too young: the newest eligible non-prerelease stands in.
    return semver.maxSatisfying(eligible, "*");
  }
  return semver.maxSatisfying(eligible, effective);
}

function isOldEnough(doc: Packument, version: string, minAgeMs: number, now: number): boolean {
  const published = doc.time?.[version];
  if (published === undefined) return false;
  return now - Date.parse(published) >= minAgeMs;
}
