import { DAY, type Clock } from "../../config/clock.ts";
import type { Plan } from "../../errors/index.ts";
import type { AppRecord, Lane } from "../../runtime/index.ts";
import type { User, Users } from "../accounts/users.ts";
import type { AppRecord as StoredApp } from "../apps/queries.ts";
import type { Secrets } from "../secrets/secrets.ts";

/**
 * What the runtime needs of an app beyond its row: its owner's plan (its ceilings), its secrets
 * version (part of its isolate's identity) and its lane (which processes run it). The same for an
 * op call (AppRunner) and for a write's staged build (Stager), so that the two build one isolate.
 */
export class Targets {
  constructor(
    private readonly users: Users,
    private readonly secrets: Secrets,
    private readonly clock: Clock,
  ) {}

  /** The plan that sets an app's limits: its owner's; free while unclaimed. */
  async planOf(ownerUserId: string | null): Promise<Plan> {
    if (ownerUserId === null) return "free";
    return (await this.users.byId(ownerUserId))?.plan ?? "free";
  }

  async of(app: StoredApp): Promise<AppRecord> {
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
      lane: laneOf(account, this.clock.now()),
      ownerId: owner,
    };
  }

  private async readOwner(ownerUserId: string, manifestId: string): Promise<NonNullable<StoredApp["owner"]> | null> {
    const [user, secretsVersion] = await Promise.all([this.users.byId(ownerUserId), this.secrets.version({ ownerUserId, manifestId })]);
    return user === null ? null : { plan: user.plan, createdAt: user.createdAt, secretsVersion };
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
