import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Clock } from "../../config/clock.ts";
import { ApiError } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import { can, type Actor } from "../access/access.ts";
import type { Apps } from "../apps/apps.ts";
import type { CopyPlan } from "../apps/build-seam.ts";
import type { AppRecord } from "../apps/queries.ts";
import { prepareSource, type PreparedSource } from "../source/source.ts";
import { BuildError } from "./build-error.ts";
import { lockDigest, type BuildPipeline, type Stage } from "./pipeline.ts";
import { claimNext, nextClaimableAt, publishedRevision, updateHeld, type BuildRow } from "./queries.ts";
import type { DirectLock } from "./resolve.ts";
import { QUEUE_DEADLINE_MS } from "./status.ts";
import type { ContentObjects } from "../../blobs/objects.ts";

/** Tries per build while the registry cannot be reached; then the build fails with that error. */
export const MAX_ATTEMPTS = 3;
/** How often an idle runner looks for builds other instances queued or abandoned. */
const POLL_MS = 2_000;

export interface RunnerOptions {
  leaseMs: number;
  retryMs: number;
  /** Look for work on a timer (production); tests without background work rely on kicks. */
  poll: boolean;
}

/** Stores a built copy as a new app with what its plan carries over; null when it cannot (the source is gone). */
export type CopyPublisher = (input: { appId: string; userId: string; prepared: PreparedSource; plan: CopyPlan }) => Promise<AppRecord | null>;

/** A build whose lease this runner lost (superseded, canceled, or taken over): stop quietly. */
class Abandoned extends Error {}

/**
 * Runs build jobs, one at a time per instance, from the `builds` table. Jobs are claimed
 * through leases (queries.ts), renewed while the job runs; a runner that dies leaves its lease
 * to run out, and whichever instance looks next takes the job over from the start. A job that
 * already published before its holder died is recognised by its revision and only recorded.
 */
export class BuildRunner {
  private readonly holder = randomUUID();
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private wake: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly pipeline: BuildPipeline,
    private readonly options: RunnerOptions,
    private readonly log: Logger,
    /** Told of every build that reached a terminal state here. */
    private readonly settled: (buildId: string) => void,
    /** Publishes a copy's build, with the data the copy carries over (Copies.publishBuilt). */
    private readonly copyPublisher: CopyPublisher | null = null,
    /** S3: the bundle goes there as an object before its row commits (null: in the row). */
    private readonly objects: ContentObjects | null = null,
  ) {}

  start(): void {
    if (this.options.poll && this.timer === null) {
      this.timer = setInterval(() => this.kick(), POLL_MS);
      this.timer.unref();
    }
    this.kick();
  }

  /** Looks for work now (after a write queued a build). */
  kick(): void {
    if (this.closed) return;
    if (this.running !== null) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((error: unknown) => this.log.error({ err: error }, "build runner failed"))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Stops taking jobs and waits for the one under way. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    if (this.wake !== null) clearTimeout(this.wake);
    await this.running;
  }

  private async drain(): Promise<void> {
    while (!this.closed) {
      const row = await claimNext(this.db, this.holder, this.clock.now(), this.options.leaseMs);
      if (row === null) break;
      await this.runJob(row);
    }
    await this.wakeForNext();
  }

  /** A retry waits out its delay as a lease; wake when the earliest one ends. */
  private async wakeForNext(): Promise<void> {
    if (this.closed) return;
    const at = await nextClaimableAt(this.db);
    if (this.wake !== null) clearTimeout(this.wake);
    this.wake = null;
    if (at === null) return;
    this.wake = setTimeout(() => this.kick(), Math.max(10, at - this.clock.now() + 5));
    this.wake.unref();
  }

  private async runJob(row: BuildRow): Promise<void> {
    const heartbeat = setInterval(() => {
      updateHeld(this.db, row.id, this.holder, { lease_until: this.clock.now() + this.options.leaseMs }).catch((error: unknown) =>
        this.log.warn({ err: error, buildId: row.id }, "build lease renewal failed"),
      );
    }, Math.max(50, Math.floor(this.options.leaseMs / 3)));
    heartbeat.unref();
    try {
      if (this.clock.now() > Number(row.deadline)) throw new BuildError("app_build_expired", "the build did not finish before its deadline");
      // The claim counted this attempt: 1 means no runner started it before its queue deadline.
      if (Number(row.attempts) === 1 && this.clock.now() > Number(row.accepted_at) + QUEUE_DEADLINE_MS) {
        throw new BuildError("app_build_expired", "the build waited in the queue past its queue deadline; write the source again");
      }
      const already = await publishedRevision(this.db, row);
      if (already !== null) return await this.finish(row, { state: "published", revision: already });
      const deadline = new AbortController();
      await this.beforeDeadline(row, this.build(row, deadline.signal), deadline);
      await this.publish(row);
    } catch (error) {
      if (error instanceof Abandoned) return;
      await this.failed(row, error);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * `work`, or app_build_expired when the build's deadline comes first. The work is then told
   * (`deadline`): its registry request under way ends and it starts no next step.
   */
  private async beforeDeadline(row: BuildRow, work: Promise<void>, deadline: AbortController): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new BuildError("app_build_expired", "the build did not finish before its deadline");
        deadline.abort(error);
        reject(error);
      }, Math.max(0, Number(row.deadline) - this.clock.now()));
    });
    work.catch(() => undefined);
    try {
      await Promise.race([work, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Makes the bundle unless one for this exact input exists (another build of the same source). */
  private async build(row: BuildRow, signal: AbortSignal): Promise<void> {
    const stage = async (state: Stage) => {
      if (!(await updateHeld(this.db, row.id, this.holder, { state, updated_at: this.clock.now() }))) throw new Abandoned();
    };
    const existing = await this.db.selectFrom("build_bundles").select("lock").where("input_digest", "=", row.input_digest).executeTakeFirst();
    let direct: DirectLock;
    if (existing !== undefined) {
      direct = (JSON.parse(existing.lock) as { direct: DirectLock }).direct;
    } else {
      const prior = row.prior_lock === null ? {} : (JSON.parse(row.prior_lock) as DirectLock);
      const output = await this.pipeline.run(row.module, prior, this.clock.now(), stage, signal);
      direct = output.direct;
      const objectHash = this.objects === null ? null : await this.objects.put(output.bundle);
      await this.db
        .insertInto("build_bundles")
        .values({
          input_digest: row.input_digest,
          bundle: objectHash === null ? output.bundle : "",
          object_hash: objectHash,
          lock: JSON.stringify({ direct: output.direct, graph: output.graph }),
          lock_digest: lockDigest(output.direct),
          node_builtins: output.nodeBuiltins.length,
          size_bytes: Buffer.byteLength(output.bundle),
          created_at: this.clock.now(),
        })
        .onConflict((oc) => oc.column("input_digest").doNothing())
        .execute();
    }
    const versions = Object.fromEntries(Object.keys(direct).sort().map((name) => [name, direct[name]?.version ?? ""]));
    const held = await updateHeld(this.db, row.id, this.holder, {
      state: "validating",
      lock: JSON.stringify(versions),
      lock_digest: lockDigest(direct),
      updated_at: this.clock.now(),
    });
    if (!held) throw new Abandoned();
  }

  /**
   * Stores the revision, as the writer: who lost write access meanwhile publishes nothing
   * (`app_build_authority_lost`), and a write that named its base revision publishes only over
   * that revision; otherwise it is `superseded`.
   */
  private async publish(row: BuildRow): Promise<void> {
    const actor = JSON.parse(row.actor) as Actor;
    const prepared = { ...(await prepareSource({ module: row.module, ui: row.ui, styles: row.styles })), build: row.input_digest };
    if (row.copy !== null) {
      if (this.copyPublisher === null || actor?.kind !== "user") throw new Error("a copy build without a copy publisher or a user");
      const copy = await this.copyPublisher({ appId: row.app_id, userId: actor.userId, prepared, plan: JSON.parse(row.copy) as CopyPlan });
      return this.finish(row, copy === null ? { state: "canceled" } : { state: "published", revision: copy.revision });
    }
    const current = await this.apps.get(row.app_id);
    if (row.intent !== "create" || current !== null) {
      if (current === null) return this.finish(row, { state: "canceled" });
      if (!can(await this.apps.roleOf(actor, current), "source:write")) {
        throw new BuildError("app_build_authority_lost", "the writer can no longer write this app, so the build was not published");
      }
    }
    const app = await this.apps.publishBuilt({
      intent: row.intent,
      appId: row.app_id,
      actor,
      baseRevision: row.base_revision === null ? null : Number(row.base_revision),
      prepared,
      lockFrom: null,
      acceptedAt: Number(row.accepted_at),
      buildId: row.id,
    });
    if (app === null) return this.finish(row, { state: "superseded" });
    await this.finish(row, { state: "published", revision: app.revision });
  }

  private async failed(row: BuildRow, error: unknown): Promise<void> {
    const failure =
      error instanceof BuildError
        ? error
        : error instanceof ApiError
          ? new BuildError(error.kind === "app_build_authority_lost" ? error.kind : "app_build_failed", error.message)
          : new BuildError("app_build_failed", "the build failed inside the service; it was logged");
    if (!(error instanceof BuildError) && !(error instanceof ApiError)) this.log.error({ err: error, buildId: row.id }, "build failed unexpectedly");
    const now = this.clock.now();
    // The claim counted this attempt in the row it returned.
    const attempts = Number(row.attempts);
    const delay = this.options.retryMs * 2 ** (attempts - 1);
    if (failure.retryable && attempts < MAX_ATTEMPTS && now + delay < Number(row.deadline)) {
      // Back in the queue, held by no one until the delay ends.
      await updateHeld(this.db, row.id, this.holder, { state: "queued", lease_holder: null, lease_until: now + delay, error: JSON.stringify(failure), updated_at: now });
      return;
    }
    await this.finish(row, { state: failure.kind === "app_build_expired" ? "expired" : "failed", error: failure });
  }

  private async finish(row: BuildRow, end: { state: "published" | "failed" | "superseded" | "canceled" | "expired"; revision?: number; error?: BuildError }): Promise<void> {
    const now = this.clock.now();
    // Published is recorded whatever happened meanwhile: the revision exists, and saying
    // otherwise would hide it. Other endings only from the holder of an active build.
    const set = {
      state: end.state,
      updated_at: now,
      finished_at: now,
      lease_holder: null,
      lease_until: null,
      ...(end.revision === undefined ? {} : { revision: end.revision }),
      ...(end.error === undefined ? {} : { error: JSON.stringify(end.error) }),
    };
    if (end.state === "published") await this.db.updateTable("builds").set(set).where("id", "=", row.id).execute();
    else await updateHeld(this.db, row.id, this.holder, set);
    this.settled(row.id);
  }
}
