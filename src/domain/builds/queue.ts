import { createHash, randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import type { Actor } from "../access/access.ts";
import type { BuildRequest, BuildSeam, CopyPlan } from "../apps/build-seam.ts";
import type { PreparedSource } from "../source/source.ts";
import { BUILDER_VERSION } from "./pipeline.ts";
import { ACTIVE_STATES, activeCounts, supersede } from "./queries.ts";
import type { DirectLock } from "./resolve.ts";
import { BUILD_DEADLINE_MS } from "./status.ts";

/** Builds waiting or running at once, in all; anonymous writers may hold only part of them. */
export const QUEUE_CAP = 200;
export const ANONYMOUS_QUEUE_CAP = 50;
/** Builds one writer (a user, an app token) may have waiting or running at once. */
export const WRITER_QUEUE_CAP = 10;

/** The key a bundle is kept under: the builder's version and the module's exact text. */
export function inputDigest(module: string): string {
  return createHash("sha256").update(BUILDER_VERSION).update("\0").update(module).digest("hex");
}

/**
 * Where app writes queue the builds of modules that import npm packages (the BuildSeam the app
 * lifecycle and copies hand them to): a row in `builds`, taken by whichever instance's runner
 * leases it (Builds). Needs nothing but the store, so it is built before the services that use it.
 */
export class BuildQueue implements BuildSeam {
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Called after each build is queued (the runner wakes). */
  onAccepted(listener: () => void): void {
    this.listeners.push(listener);
  }

  async supersede(trx: Kysely<Database>, appId: string): Promise<void> {
    await supersede(trx, appId, this.clock.now());
  }

  async holdForPublish(trx: Kysely<Database>, buildId: string): Promise<boolean> {
    const held = await trx.updateTable("builds").set({ updated_at: this.clock.now() }).where("id", "=", buildId).where("state", "in", ACTIVE_STATES).executeTakeFirst();
    return held.numUpdatedRows > 0n;
  }

  async activeByKey(idempotencyKey: string): Promise<{ buildId: string; appId: string; copy: CopyPlan | null } | null> {
    const row = await this.db
      .selectFrom("builds")
      .select(["id", "app_id", "copy"])
      .where("idempotency_key", "=", idempotencyKey)
      .where("state", "in", ACTIVE_STATES)
      .orderBy("accepted_at", "desc")
      .executeTakeFirst();
    return row === undefined ? null : { buildId: row.id, appId: row.app_id, copy: row.copy === null ? null : (JSON.parse(row.copy) as CopyPlan) };
  }

  /**
   * The digest of the bundle built from this exact source, or null. Finding it counts as a use:
   * its `created_at` moves to now, and the sweep takes only bundles unused for a day (Builds.sweep),
   * so the one a write is about to name stays until that write's revision names it. Read alone,
   * a sweep between this and the write's commit left a revision naming a bundle that was gone.
   */
  async bundled(prepared: PreparedSource): Promise<string | null> {
    const digest = inputDigest(prepared.source.module);
    const used = await this.db.updateTable("build_bundles").set({ created_at: this.clock.now() }).where("input_digest", "=", digest).executeTakeFirst();
    return used.numUpdatedRows > 0n ? digest : null;
  }

  /**
   * Queues the build, superseding any the app has waiting or running (a newer write wins), in
   * one transaction with `within`. A full queue is 503 `app_build_capacity`.
   */
  async accept(request: BuildRequest, within?: (trx: Kysely<Database>) => Promise<void>): Promise<string> {
    const id = randomUUID();
    const now = this.clock.now();
    const prior = request.lockFrom === null ? null : await this.lockOf(request.lockFromApp ?? request.appId, request.lockFrom);
    const actor = JSON.stringify(bare(request.actor));
    await this.db.transaction().execute(async (trx) => {
      const counts = await activeCounts(trx, actor);
      if (counts.all >= QUEUE_CAP || (request.actor === null && counts.anonymous >= ANONYMOUS_QUEUE_CAP)) {
        throw apiError("app_build_capacity", "the build queue is full; retry in a minute");
      }
      // One writer cannot fill the queue for everyone else.
      if (request.actor !== null && counts.writer >= WRITER_QUEUE_CAP) {
        throw apiError("app_build_capacity", `you have ${WRITER_QUEUE_CAP} builds waiting or running; wait for one to finish`);
      }
      await supersede(trx, request.appId, now);
      await trx
        .insertInto("builds")
        .values({
          id,
          app_id: request.appId,
          intent: request.intent,
          state: "queued",
          actor,
          base_revision: request.baseRevision,
          module: request.prepared.source.module,
          ui: request.prepared.source.ui,
          styles: request.prepared.source.styles,
          input_digest: inputDigest(request.prepared.source.module),
          prior_lock: prior === null ? null : JSON.stringify(prior),
          lock: null,
          lock_digest: null,
          error: null,
          attempts: 0,
          lease_holder: null,
          lease_until: null,
          revision: null,
          accepted_at: now,
          updated_at: now,
          finished_at: null,
          deadline: now + BUILD_DEADLINE_MS,
          idempotency_key: request.idempotencyKey ?? null,
          copy: request.copy === undefined ? null : JSON.stringify(request.copy),
        })
        .execute();
      if (within !== undefined) await within(trx);
    });
    for (const listener of this.listeners) listener();
    return id;
  }

  /** The exact versions a revision's bundle was made with, or null when it had none. */
  private async lockOf(appId: string, revision: number): Promise<DirectLock | null> {
    const row = await this.db
      .selectFrom("app_versions")
      .innerJoin("build_bundles", "build_bundles.input_digest", "app_versions.build_digest")
      .select("build_bundles.lock")
      .where("app_versions.app_id", "=", appId)
      .where("app_versions.revision", "=", revision)
      .executeTakeFirst();
    return row === undefined ? null : (JSON.parse(row.lock) as { direct: DirectLock }).direct;
  }
}

function bare(actor: Actor): Actor {
  if (actor === null) return null;
  if (actor.kind === "user") return { kind: "user", userId: actor.userId };
  if (actor.kind === "app") return { kind: "app", appId: actor.appId };
  return { kind: "render", appId: actor.appId, userId: actor.userId };
}
