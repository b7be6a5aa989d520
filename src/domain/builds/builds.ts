import { EventEmitter } from "node:events";
import { readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import { requirePermission, type Actor } from "../access/access.ts";
import type { Apps } from "../apps/apps.ts";
import { UUID } from "../ids.ts";
import { BuildPipeline } from "./pipeline.ts";
import { ACTIVE_STATES, findBuild, isActive } from "./queries.ts";
import { Registry, sha512Of } from "./registry.ts";
import type { BuildQueue } from "./queue.ts";
import { BuildRunner, type CopyPublisher } from "./runner.ts";
import { buildStatus, INSPECTION_MS, type BuildStatus } from "./status.ts";
import type { ContentObjects } from "../../blobs/objects.ts";

/** The longest a request may hold its connection for `Prefer: wait=N`. */
export const MAX_WAIT_SECONDS = 60;
/** How long a bundle (or tarball) no kept revision runs stays, for a source written again soon. */
export const BUNDLE_GRACE_MS = 24 * 60 * 60 * 1000;
// Builds other instances finish are seen by re-reading at this pace while waiting.
const WAIT_POLL_MS = 500;

export interface BuildsConfig {
  dataDir: string;
  npm: { registryUrl: string; token: string | null; minReleaseAgeMs: number };
  buildLeaseMs: number;
  buildRetryMs: number;
}


/**
 * Builds of modules that import npm packages (issue 17, DECISIONS §10): their status, waiting for
 * them, and the runner that does the work; writes queue them through the BuildQueue (queue.ts).
 */
export class Builds {
  private readonly settledEvents = new EventEmitter();
  readonly runner: BuildRunner;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly apps: Apps,
    /** Where writes queue their builds; each one it accepts wakes the runner. */
    queue: BuildQueue,
    /** Copies publish through the copies service, which carries their data over. */
    copyPublisher: CopyPublisher,
    private readonly config: BuildsConfig,
    private readonly baseUrl: () => string,
    log: Logger,
    poll: boolean,
    /** S3: bundles are objects there, their rows holding only the hash (null: the bundle in its row). */
    objects: ContentObjects | null = null,
  ) {
    this.settledEvents.setMaxListeners(0);
    const registry = new Registry({ url: config.npm.registryUrl, minReleaseAgeMs: config.npm.minReleaseAgeMs, ...(config.npm.token === null ? {} : { token: config.npm.token }) });
    const pipeline = new BuildPipeline(registry, config.dataDir);
    this.runner = new BuildRunner(db, clock, apps, pipeline, { leaseMs: config.buildLeaseMs, retryMs: config.buildRetryMs, poll }, log, (id) => this.settledEvents.emit(id), copyPublisher, objects);
    queue.onAccepted(() => this.runner.kick());
  }

  /**
   * GET /api/v1/builds/{id}: readable by whoever may write the app; before a create publishes,
   * by its writer (the same user, or the new app's token). Others get 404, as for no build.
   */
  async status(buildId: string, actor: Actor): Promise<BuildStatus> {
    if (!UUID.test(buildId)) throw apiError("invalid_id", `${buildId} is not a build id (a UUID)`);
    const row = await findBuild(this.db, buildId);
    if (row === null) throw apiError("not_found", `no build ${buildId}`);
    const app = await this.apps.get(row.app_id);
    if (app !== null) {
      requirePermission(await this.apps.roleOf(actor, app), app, "source:write");
    } else if (!sameWriter(actor, JSON.parse(row.actor) as Actor, row.app_id)) {
      throw apiError("not_found", `no build ${buildId}`);
    }
    return buildStatus(row, this.clock.now(), this.baseUrl(), app?.revision ?? null);
  }

  /** The status once terminal, or after `seconds` (Prefer: wait=N), whichever comes first. */
  async waitFor(buildId: string, actor: Actor, seconds: number): Promise<BuildStatus> {
    const until = Date.now() + Math.min(seconds, MAX_WAIT_SECONDS) * 1000;
    let status = await this.status(buildId, actor);
    while (isActive(status.state) && Date.now() < until) {
      await this.settled(buildId, Math.min(WAIT_POLL_MS, until - Date.now()));
      status = await this.status(buildId, actor);
    }
    return status;
  }

  private settled(buildId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.settledEvents.off(buildId, done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.settledEvents.once(buildId, done);
    });
  }

  /** Records the Idempotency-Key a write of this build came with (its status then says until when it replays). */
  async noteIdempotencyKey(buildId: string, key: string): Promise<void> {
    await this.db.updateTable("builds").set({ idempotency_key: key }).where("id", "=", buildId).execute();
  }

  /** The app is gone: its waiting and running builds end `canceled`. */
  async cancelForApp(appId: string): Promise<void> {
    const now = this.clock.now();
    await this.db
      .updateTable("builds")
      .set({ state: "canceled", updated_at: now, finished_at: now, lease_holder: null, lease_until: null })
      .where("app_id", "=", appId)
      .where("state", "in", ACTIVE_STATES)
      .execute();
  }

  /**
   * Forgets finished builds once their status is no longer inspectable, and bundles and cached
   * tarballs no kept revision runs (after a day unused, so a source written again soon still
   * publishes at once).
   */
  private get dataDir(): string {
    return this.config.dataDir;
  }

  async sweep(): Promise<{ builds: number; bundles: number; tarballs: number; folders: number }> {
    const now = this.clock.now();
    const builds = await this.db.deleteFrom("builds").where("finished_at", "<", now - INSPECTION_MS).executeTakeFirst();
    const bundles = await this.db
      .deleteFrom("build_bundles")
      .where("created_at", "<", now - BUNDLE_GRACE_MS)
      .where((eb) =>
        eb.not(eb.exists(eb.selectFrom("app_versions").select("app_versions.revision").whereRef("app_versions.build_digest", "=", "build_bundles.input_digest"))),
      )
      .where((eb) =>
        eb.not(
          eb.exists(eb.selectFrom("builds").select("builds.id").whereRef("builds.input_digest", "=", "build_bundles.input_digest").where("builds.state", "in", ACTIVE_STATES)),
        ),
      )
      .executeTakeFirst();
    return { builds: Number(builds.numDeletedRows), bundles: Number(bundles.numDeletedRows), tarballs: await this.sweepTarballs(now), folders: await this.sweepWorkFolders(now) };
  }

  /**
   * Removes build folders a day old: a build removes its own when it ends, but one cut short by
   * a crash left its unpacked packages (up to 100 MiB) for good. No build runs that long.
   */
  private sweepWorkFolders(now: number): Promise<number> {
    return removeOlder(join(this.dataDir, "builds"), now - BUNDLE_GRACE_MS);
  }

  /** Removes cached tarballs that no kept bundle was made from, once a day old. */
  private async sweepTarballs(now: number): Promise<number> {
    const kept = new Set<string>();
    for (const row of await this.db.selectFrom("build_bundles").select("lock").execute()) {
      const { graph } = JSON.parse(row.lock) as { graph: Record<string, string> };
      for (const integrity of Object.values(graph)) {
        const digest = sha512Of(integrity);
        if (digest !== null) kept.add(`${digest.toString("hex")}.tgz`);
      }
    }
    return removeOlder(join(this.dataDir, "npm-cache"), now - BUNDLE_GRACE_MS, kept);
  }

  close(): Promise<void> {
    return this.runner.close();
  }
}

/**
 * The actor as a build stores it: who, without how they came (a principal also carries its
 * token or session id), so one writer's builds compare equal whichever credential wrote them.
 */

/** Whether `actor` is the writer recorded on a build (or holds the token of the app it creates). */
function sameWriter(actor: Actor, writer: Actor, appId: string): boolean {
  if (actor === null) return false;
  if (actor.kind === "user") return writer?.kind === "user" && writer.userId === actor.userId;
  return actor.kind === "app" && actor.appId === appId;
}

/** Removes what `dir` holds that was last changed before `before`, but the names in `kept`; answers how many went. */
async function removeOlder(dir: string, before: number, kept: ReadonlySet<string> = new Set()): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (kept.has(name)) continue;
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (info === null || info.mtimeMs > before) continue;
    await rm(path, { recursive: true, force: true });
    removed++;
  }
  return removed;
}
