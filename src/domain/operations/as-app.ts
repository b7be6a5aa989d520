import { DAY, type Clock } from "../../config/clock.ts";
import type { User, Users } from "../accounts/users.ts";
import { appCode, type AppRecord, type Lane, type Operations, type Role, type Trigger } from "../../runtime/index.ts";
import type { Apps } from "../apps/apps.ts";
import type { AppRecord as StoredApp } from "../apps/queries.ts";
import type { PreparedSource } from "../apps/source.ts";
import type { StagedBuild, StagingSeam } from "../apps/staging-seam.ts";
import type { Secrets } from "../secrets/secrets.ts";
import type { Plan } from "../../errors/index.ts";

/**
 * Every op call starts here: the public route (as its caller), routine ticks and webhook
 * deliveries (as the app itself, never as the owner opening it). One place assembles what the
 * executor needs of an app: its active manifest, its owner's plan and its secrets version.
 */
export class AppRunner implements StagingSeam {
  private readonly warming = new Map<string, Promise<void>>();
  /** The newest write's warm-up, waiting for the one under way for its app to end. */
  private readonly nextWarm = new Map<string, { revision: number; staged: Staged | null }>();
  /** Apps whose staged build is under way. */
  private readonly staging = new Set<string>();

  constructor(
    private readonly apps: Apps,
    private readonly users: Users,
    private readonly secrets: Secrets,
    private readonly operations: Operations,
    private readonly clock: Clock,
  ) {}

  /** As a caller the route has already authorized. Returns the op's `value` or throws. */
  async call(app: StoredApp, caller: { role: Role; userId: string | null }, op: string, input: unknown, trigger: Trigger): Promise<unknown> {
    return this.operations.call({ app: await this.target(app), ...caller, op, input, trigger });
  }

  /** As the app itself (role `app`, no user): routine ticks and webhook deliveries (which have read the app already). */
  async run(
    appOrId: StoredApp | string,
    op: string,
    input: unknown,
    trigger: Extract<Trigger, "routine" | "webhook">,
    headers: Record<string, string> = {},
    onWaited?: () => void,
  ): Promise<unknown> {
    const app = typeof appOrId === "string" ? await this.apps.mustFind(appOrId) : appOrId;
    return this.operations.call({ app: await this.target(app), role: "app", op, input, trigger, userId: null, headers, ...(onWaited === undefined ? {} : { onWaited }) });
  }

  /**
   * After a source write: builds the new revision's isolate ahead of its first call, where the
   * app ran lately (an agent that writes and then calls is spared the build, ~4 ms here). Not
   * awaited by the write, and never fails it: a refusal or fault is the next call's to report.
   * One warm-up per app at a time: writes that come while one is under way leave only the newest
   * to follow it (it warms whatever revision is active by then). Source writes are not metered
   * (spec: rate limits), and a build costs workerd ~3–6 ms: one warm-up per write let one owner's
   * writers queue builds faster than a process could serve them, until its pings went unanswered
   * and the process was killed as hung with its neighbours' calls in it.
   */
  warm(appId: string, revision: number, staged?: StagedBuild): void {
    if (!this.operations.ranLately(appId)) return;
    const write = { revision, staged: staged instanceof Staged && staged.appId === appId ? staged : null };
    if (this.warming.has(appId)) this.nextWarm.set(appId, write);
    else this.startWarm(appId, write);
  }

  private startWarm(appId: string, write: { revision: number; staged: Staged | null }): void {
    const done: Promise<void> = this.warmNow(appId, write.revision, write.staged)
      .catch(() => undefined)
      .finally(() => {
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

  /**
   * A source write's code, before it commits (StagingSeam): where warm() would build its isolate
   * after the commit, starts the build now, so that it overlaps the commit (~2 ms here of a
   * ~4–9 ms build). Code that needs a build of its npm imports runs a bundle, and is not staged.
   */
  stage(app: StoredApp, prepared: PreparedSource): StagedBuild | null {
    // One staged build per app at a time (see warm()): a write that comes meanwhile stages nothing.
    if (prepared.build !== undefined || !this.operations.ranLately(app.id) || this.staging.has(app.id)) return null;
    this.staging.add(app.id);
    const staging = this.target(app).then(async (target) => {
      const code = appCode(prepared.source.module, prepared.manifest);
      return { ...(await this.operations.stage({ ...target, manifest: prepared.manifest }, code)), secretsVersion: target.secretsVersion ?? 0 };
    });
    const staged = new Staged(app.id, staging.catch(() => null));
    void staged.built().finally(() => this.staging.delete(app.id));
    return staged;
  }

  /** Warms the app's active revision; `staged` holds the code of `revision`, the one its write published. */
  private async warmNow(appId: string, revision: number, staged: Staged | null): Promise<void> {
    const app = await this.apps.get(appId);
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
  async planOf(ownerUserId: string | null): Promise<Plan> {
    if (ownerUserId === null) return "free";
    return (await this.users.byId(ownerUserId))?.plan ?? "free";
  }

  private async target(app: StoredApp): Promise<AppRecord> {
    const owner = app.ownerUserId;
    // Usually read with the app already (no query of their own); a record built on create is not.
    const account = owner === null ? null : (app.owner ?? (await this.readOwner(owner, app.manifestId)));
    return {
      id: app.id,
      revision: app.revision,
      manifest: app.manifest,
      plan: account?.plan ?? "free",
      // Secrets belong to claimed apps only; the version is part of the isolate's identity.
      secretsVersion: account?.secretsVersion ?? 0,
      dataVersion: app.dataVersion,
      storedBytes: app.storedBytes,
      lane: laneOf(account, this.clock.now()),
      ownerId: owner,
    };
  }

  private async readOwner(ownerUserId: string, manifestId: string): Promise<NonNullable<StoredApp["owner"]> | null> {
    const [user, secretsVersion] = await Promise.all([this.users.byId(ownerUserId), this.secrets.version({ ownerUserId, manifestId })]);
    return user === null ? null : { plan: user.plan, createdAt: user.createdAt, secretsVersion };
  }
}

/** The build AppRunner.stage began for one write, carried by its `published` event. */
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

/** A free-plan account this young is new: its apps run with the unclaimed ones (issue 14). */
export const NEW_ACCOUNT_MS = DAY;

/**
 * Which executor processes run an app. Unclaimed apps, and the apps of new free accounts, run
 * apart from established claimed apps: signing up is free and unmetered, so a fresh account's
 * looping apps must not share a process with apps people rely on. Paid accounts are established.
 */
function laneOf(account: Pick<User, "plan" | "createdAt"> | null, now: number): Lane {
  if (account === null) return "free";
  return account.plan === "free" && now - account.createdAt < NEW_ACCOUNT_MS ? "free" : "claimed";
}
