import type { AppRecord as StoredApp } from "../apps/queries.ts";
import type { StagedBuild, StagingSeam } from "../apps/staging-seam.ts";
import type { Operations } from "../../runtime/index.ts";
import { appCode } from "../../runtime/index.ts";
import type { PreparedSource } from "../source/source.ts";
import type { Targets } from "./targets.ts";

/**
 * Starts a source write's isolate building before the write commits (the StagingSeam the app
 * lifecycle calls): needs only the runtime and the app's target, so it is built before Apps.
 */
export class Stager implements StagingSeam {
  /** Apps whose staged build is under way. */
  private readonly staging = new Set<string>();

  constructor(
    private readonly targets: Targets,
    private readonly operations: Operations,
  ) {}

  /**
   * A source write's code, before it commits (StagingSeam): where warm() would build its isolate
   * after the commit, starts the build now, so that it overlaps the commit (~2 ms here of a
   * ~4–9 ms build). Code that needs a build of its npm imports runs a bundle, and is not staged.
   */
  stage(app: StoredApp, prepared: PreparedSource): StagedBuild | null {
    // One staged build per app at a time (see warm()): a write that comes meanwhile stages nothing.
    if (prepared.build !== undefined || app.suspension !== null || !this.operations.ranLately(app.id) || this.staging.has(app.id)) return null;
    this.staging.add(app.id);
    const staging = this.targets.of(app).then(async (target) => {
      const code = appCode(prepared.source.module, prepared.manifest);
      return { ...(await this.operations.stage({ ...target, manifest: prepared.manifest }, code)), secretsVersion: target.secretsVersion ?? 0 };
    });
    const staged = new Staged(app.id, staging.catch(() => null));
    void staged.built().finally(() => this.staging.delete(app.id));
    return staged;
  }
}

/** The build Stager.stage began for one write, carried by its `published` event. */
export class Staged implements StagedBuild {
  constructor(
    readonly appId: string,
    /** Its isolate's key and the secrets it was built with, once sent; null if it could not start. */
    readonly staging: Promise<{ key: string; built: Promise<unknown>; secretsVersion: number } | null>,
  ) {}

  /** Settles once the isolate is built, or its build failed (tests wait on it). */
  async built(): Promise<void> {
    await (await this.staging)?.built;
  }
}

