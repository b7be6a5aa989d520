import { createHash, randomUUID } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join, resolve, sep } from "node:path";
import { version as esbuildVersion } from "esbuild";
import { parseModule } from "../source/manifest.ts";
import { BuildError } from "./build-error.ts";
import { bundleModule } from "./bundle.ts";
import { scanImports } from "./imports.ts";
import { checkBundle } from "../../runtime/index.ts";
import { sha512Of, type Registry } from "./registry.ts";
import { resolveImports, type DirectLock, type Placed } from "./resolve.ts";
import { unpackTarball, type UnpackBudget } from "./unpack.ts";

/**
 * Part of every bundle's cache key: a change to how bundles are made (esbuild, its options, the
 * require shim, the runtime) must not serve a bundle made the old way. Bump it with such changes.
 */
export const BUILDER_VERSION = `brickyard-build-1 esbuild-${esbuildVersion}`;

/** What a finished build publishes. */
export interface BuildOutput {
  bundle: string;
  nodeBuiltins: string[];
  direct: DirectLock;
  /** `{"name@version": integrity}` of every package in the graph. */
  graph: Record<string, string>;
}

export type Stage = "resolving" | "building" | "validating";

/**
 * Module in, bundle out: resolve (`resolving`), fetch, check and unpack each tarball, bundle
 * (`building`), load in a throwaway isolate (`validating`). Tarballs are cached under
 * `cacheDir` by their sha512 and checked again on every read; the work folder is removed after.
 */
export class BuildPipeline {
  constructor(
    private readonly registry: Registry,
    private readonly dataDir: string,
  ) {}

  private get cacheDir(): string {
    return join(this.dataDir, "npm-cache");
  }

  /**
   * `signal` is the build's deadline: when it fires, the request under way ends and no next step
   * starts (a build past its deadline had gone on fetching and unpacking in the background).
   */
  async run(module: string, prior: DirectLock, now: number, stage: (stage: Stage) => Promise<void>, signal?: AbortSignal): Promise<BuildOutput> {
    await stage("resolving");
    const imports = scanImports(parseModule(module), module).npm;
    const resolution = await resolveImports(this.registry, imports, prior, now, signal);
    signal?.throwIfAborted();
    await stage("building");
    const work = join(this.dataDir, "builds", randomUUID());
    try {
      const budget: UnpackBudget = { used: 0 };
      for (const placed of resolution.packages) {
        const tarball = await this.tarball(placed, signal);
        signal?.throwIfAborted();
        await unpackTarball(tarball, inside(work, placed.dir), budget, `${placed.name}@${placed.version.version}`);
      }
      signal?.throwIfAborted();
      const bundle = await bundleModule(module, work);
      await stage("validating");
      const unloadable = await checkBundle(bundle.code, bundle.nodeBuiltins.length > 0, work);
      if (unloadable !== null) throw new BuildError("app_build_failed", `the bundle does not load: ${unloadable}`);
      const graph: Record<string, string> = {};
      for (const p of resolution.packages) graph[`${p.name}@${p.version.version}`] = p.version.dist.integrity ?? "";
      return { bundle: bundle.code, nodeBuiltins: bundle.nodeBuiltins, direct: resolution.direct, graph };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  private async tarball(placed: Placed, signal?: AbortSignal): Promise<Buffer> {
    const what = `${placed.name}@${placed.version.version}`;
    const digest = sha512Of(placed.version.dist.integrity);
    if (digest === null) throw new BuildError("app_build_failed", `${what} has no sha512 integrity in the registry; it cannot be checked`, { specifier: placed.specifier });
    const file = join(this.cacheDir, `${digest.toString("hex")}.tgz`);
    const cached = await readFile(file).catch(() => null);
    if (cached !== null && createHash("sha512").update(cached).digest().equals(digest)) return cached;
    const fetched = await this.registry.tarball(placed.name, placed.version, placed.specifier, signal);
    await mkdir(this.cacheDir, { recursive: true });
    const partial = `${file}.${randomUUID()}.partial`;
    await writeFile(partial, fetched, { mode: 0o600 });
    await rename(partial, file);
    return fetched;
  }
}

/** SHA-256 of the direct imports' exact versions (`resolvedDependencies.server`), keys sorted. */
export function lockDigest(direct: DirectLock): string {
  const versions = Object.fromEntries(Object.keys(direct).sort().map((name) => [name, direct[name]?.version]));
  return createHash("sha256").update(JSON.stringify(versions)).digest("hex");
}

/** `dir` under `work`, refused if it leads anywhere else (the resolver checks names; this checks the path). */
function inside(work: string, dir: string): string {
  const target = resolve(work, dir);
  if (!target.startsWith(work + sep)) throw new BuildError("app_build_failed", `a package would unpack outside the build's folder (${dir.slice(0, 240)})`);
  return target;
}
