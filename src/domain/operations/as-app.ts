import type { Plan } from "../../errors/index.ts";
import type { AppRecord, Operations, Role, Trigger } from "../../runtime/index.ts";
import type { Apps } from "../apps/apps.ts";
import type { AppRecord as StoredApp } from "../apps/queries.ts";
import type { StagedBuild } from "../apps/staging-seam.ts";
import { refuseSuspended } from "../apps/suspended.ts";
import { Staged } from "./stager.ts";
import type { Targets } from "./targets.ts";

export { Staged };

/**
 * Every op call starts here: the public route (as its caller), routine ticks and webhook
 * deliveries (as the app itself, never as the owner opening it). One place assembles what the
 * executor needs of an app: its active manifest, its owner's plan and its secrets version.
 */
export class AppRunner {
  private readonly warming = new Map<string, Promise<void>>();
  /** The newest write's warm-up, waiting for the one under way for its app to end. */
  private readonly nextWarm = new Map<string, { revision: number; staged: Staged | null }>();
  /** Warm-ups under way of apps that had not run lately (see warm()): at most one at a time. */
  private unproven = 0;

  constructor(
    private readonly apps: Pick<Apps, "getWithTokenEpoch" | "mustFind">,
    private readonly targets: Targets,
    private readonly operations: Operations,
  ) {}

  /** As a caller the route has already authorized. Returns the op's `value` or throws. */
  async call(app: StoredApp, caller: { role: Role; userId: string | null; visitor?: string }, op: string, input: unknown, trigger: Trigger, requestId?: string): Promise<unknown> {
    return this.operations.call({ app: await this.target(app), ...caller, op, input, trigger, ...(requestId === undefined ? {} : { requestId }) });
  }

  /** As the app itself (role `app`, no user): routine ticks and webhook deliveries (which have read the app already). */
  async run(
    appOrId: StoredApp | string,
    op: string,
    input: unknown,
    trigger: Extract<Trigger, "routine" | "webhook">,
    headers: Record<string, string> = {},
    onWaited?: () => void,
    requestId?: string,
  ): Promise<unknown> {
    const app = typeof appOrId === "string" ? await this.apps.mustFind(appOrId) : appOrId;
    const extra = { ...(onWaited === undefined ? {} : { onWaited }), ...(requestId === undefined ? {} : { requestId }) };
    return this.operations.call({ app: await this.target(app), role: "app", op, input, trigger, userId: null, headers, ...extra });
  }

  /**
   * After a source write: builds the new revision's isolate ahead of its first call (an agent
   * that writes and then calls is spared the build, ~4 ms here). Not
   * awaited by the write, and never fails it: a refusal or fault is the next call's to report.
   * One warm-up per app at a time: writes that come while one is under way leave only the newest
   * to follow it (it warms whatever revision is active by then). Source writes are not metered
   * (spec: rate limits), and a build costs workerd ~3–6 ms: one warm-up per write let one owner's
   * writers queue builds faster than a process could serve them, until its pings went unanswered
   * and the process was killed as hung with its neighbours' calls in it. An app that did not run
   * lately (idle, or never called) may be one of thousands its owner writes to, so such warm-ups
   * go one at a time across the instance, and a write that finds one under way is left for its
   * first call to build. (Once warmed, an app has run: its writes coalesce per app, as a called
   * app's do.) Not a create's: creates come by the thousand (anonymous ones most of all), and
   * warming each cost a create ~40 % more of Node (bench create row: 1,475 against 1,056 µs of
   * server CPU, 649 against 1,112 creates a second) for apps many of which are not called soon.
   */
  warm(appId: string, revision: number, staged?: StagedBuild): void {
    const write = { revision, staged: staged instanceof Staged && staged.appId === appId ? staged : null };
    if (this.warming.has(appId)) this.nextWarm.set(appId, write);
    else if (this.operations.ranLately(appId)) this.startWarm(appId, write);
    else if (this.unproven === 0 && revision > 1) this.startWarm(appId, write, true);
  }

  private startWarm(appId: string, write: { revision: number; staged: Staged | null }, unproven = false): void {
    if (unproven) this.unproven += 1;
    const done: Promise<void> = this.warmNow(appId, write.revision, write.staged)
      .catch(() => undefined)
      .finally(() => {
        if (unproven) this.unproven -= 1;
        this.warming.delete(appId);
        const next = this.nextWarm.get(appId);
        this.nextWarm.delete(appId);
        if (next !== undefined) this.startWarm(appId, next);
      });
    this.warming.set(appId, done);
  }

  /** Settles once the app's warm-ups under way or waiting, if any, are over (tests wait on it). */
  async warmed(appId: string): Promise<void> {
    for (let under = this.warming.get(appId); under !== undefined; under = this.warming.get(appId)) await under;
  }

  /** Warms the app's active revision; `staged` holds the code of `revision`, the one its write published. */
  private async warmNow(appId: string, revision: number, staged: Staged | null): Promise<void> {
    // Read as an op call reads it: the revision's first call then finds the app's row kept
    // (a miss cost that call ~0.35 ms in the publish row).
    const { app } = await this.apps.getWithTokenEpoch(appId);
    if (app === null) return;
    const target = await this.target(app);
    // The staged isolate holds this write's code with the secrets of its day. It is the active
    // revision's only if no other write published since (concurrent writers) and the secrets
    // have not changed; otherwise the active revision is built from its own code.
    const built = await staged?.staging;
    const own = built != null && target.revision === revision && built.secretsVersion === (target.secretsVersion ?? 0);
    await this.operations.warm(target, own ? built.key : null);
  }

  /** The plan that sets an app's limits: its owner's; free while unclaimed. */
  planOf(ownerUserId: string | null): Promise<Plan> {
    return this.targets.planOf(ownerUserId);
  }

  /** Every run and warm-up passes here: nothing of a suspended app runs (DECISIONS §15). */
  private target(app: StoredApp): Promise<AppRecord> {
    refuseSuspended(app);
    return this.targets.of(app);
  }
}
