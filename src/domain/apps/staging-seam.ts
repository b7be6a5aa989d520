import type { AppRecord } from "./queries.ts";
import type { PreparedSource } from "../source/source.ts";

/**
 * Where the isolate builder plugs into source writes (like BuildSeam): AppRunner implements it
 * and registers it with `apps.setStaging(…)`. Once a write of an existing app has passed every
 * check, and before it commits, the lifecycle hands the builder the code it is writing, so that
 * the isolate is built while the write commits. What comes back rides on that write's
 * `published` event; a write that fails simply drops it. `stage` never throws and never waits:
 * a build that cannot start settles as failed, and the write goes on regardless.
 */
export interface StagingSeam {
  stage(app: AppRecord, prepared: PreparedSource): StagedBuild | null;
}

/** A build begun for one write: opaque to the lifecycle, read only by the stager. */
export interface StagedBuild {
  readonly appId: string;
}
