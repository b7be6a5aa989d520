import type { RoleSource } from "../access/roles.ts";
import type { Kysely } from "kysely";
import { DAY, type Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { newAppId, UUID } from "../ids.ts";
import { isUniqueViolation, TurnBatch, type Database, type GroupCommit, type StampedCache } from "../../store/index.ts";
import type { Tokens } from "../tokens/tokens.ts";
import { directRole, requirePermission, widest, type Actor, type AppPermission, type AppRole, type Visibility } from "../access/access.ts";

import { claimApp } from "./claim.ts";
import { applyEdits, checkEditsSize, type SourceEdit } from "./edits.ts";
import { AppEvents, type AppEvent } from "./events.ts";
import { iconProblem, normalizeIcon, type Icon } from "../source/icon.ts";
import { listApps, type ListedApp } from "./listing.ts";
import type { Manifest } from "../source/manifest-types.ts";
import type { BuildDeferred, BuildIntent, BuildRequest, BuildSeam } from "./build-seam.ts";
import type { StagedBuild, StagingSeam } from "./staging-seam.ts";
import type { BoundPairing, PairingSeam } from "./pairing-seam.ts";
import { bumpRevision, commitRevision, deleteAppRows, findApp, findAppsWithTokenEpoch, findAppWithTokenEpoch, findOwnedByManifestId, findVersion, insertApp, newAppRecord, recordBytes, type AppRecord, type AppWithTokenEpoch } from "./queries.ts";
import { assertSameManifestId, expectedRevision, revisionMismatch } from "./precondition.ts";
import { prepareSource, type PreparedSource, type SourceBundle } from "../source/source.ts";
import { uuidUrl } from "./urls.ts";
import { writeAudit, type AuditContext } from "../operators/audit.ts";

/** A role a user holds on an app through some other relation than the app row (a share, a team). */
export type { RoleSource };

export const UNCLAIMED_TTL_MS = 7 * DAY;
const UPSERT_ATTEMPTS = 5;

export interface CreateInput extends SourceBundle {
  pair?: boolean;
  label?: string;
}

export interface WriteResult {
  app: AppRecord;
  warnings: string[];
}

export interface CreateResult extends WriteResult {
  /** True when a new app was made (201), false when an authenticated upsert overwrote one (200). */
  created: boolean;
  /** Anonymous creates only: the per-app token, returned this once. */
  token: string | null;
  pairing: BoundPairing | null;
}

/** A write that needs a build answers with the build instead (202). */
export type Deferrable<T> = T | { deferred: BuildDeferred };

/** How an update came to be, for its build (spec: the build status's intent). */
export interface UpdateOptions {
  ifMatch?: string;
  /** Runs in the same transaction after the new revision is stored (a restore's data). */
  within?: (trx: Kysely<Database>) => Promise<void>;
  intent?: BuildIntent;
  /** The revision whose exact npm versions unchanged ranges keep (a restore's); the current one when omitted. */
  lockFrom?: number;
}

/** The source of one revision plus its manifest: what the executor loads. */
export interface ActiveCode extends SourceBundle {
  revision: number;
  manifest: Manifest;
  /** The bundle it runs when its module imports npm packages (build_bundles' digest). */
  buildDigest: string | null;
}

/**
 * The app lifecycle (spec "App ownership and lifetime", "Source revision"; DECISIONS §3):
 * create and upsert, updates and source edits under the revision guard, reads, icon, delete.
 * Listing and claiming live beside it (listing.ts, claim.ts) and share its queries.
 */
export class Apps {
  private readonly pairing: PairingSeam | null;
  private readonly builds: BuildSeam | null;
  private readonly staging: StagingSeam | null;
  private readonly roleSources: readonly RoleSource[];
  /** Subscribe with `apps.events.on(listener)`: `published` after source writes, `deleted` after removal. */
  readonly events: AppEvents;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly tokens: Tokens,
    private readonly config: { readonly baseUrl: string },
    private readonly writes: GroupCommit,
    onListenerError: (error: unknown, event: AppEvent) => void,
    /** Op calls' app reads: kept while nothing they join changed (`cache`); on PostgreSQL one turn's misses read together (`batch`). */
    reads: { cache: StampedCache<AppWithTokenEpoch> | null; batch: boolean } = { cache: null, batch: false },
    /** What it hands work to: bound pairings, the build queue, isolate staging, and the relations granting roles (shares, teams). */
    seams: { pairing?: PairingSeam; builds?: BuildSeam; staging?: StagingSeam; roles?: readonly RoleSource[] } = {},
  ) {
    this.events = new AppEvents(onListenerError);
    this.readCache = reads.cache;
    this.batchedReads = reads.batch ? new TurnBatch<AppWithTokenEpoch>((ids) => findAppsWithTokenEpoch(this.db, ids)) : null;
    this.pairing = seams.pairing ?? null;
    this.builds = seams.builds ?? null;
    this.staging = seams.staging ?? null;
    this.roleSources = seams.roles ?? [];
  }

  private readonly readCache: StampedCache<AppWithTokenEpoch> | null;
  private readonly batchedReads: TurnBatch<AppWithTokenEpoch> | null;

  /**
   * The source ready to store: as is when it imports no npm package, with its bundle's digest
   * when that exact source was built before, or null when it needs a build first.
   */
  private async withBundle(prepared: PreparedSource): Promise<PreparedSource | null> {
    if (prepared.imports.npm.length === 0) return prepared;
    const digest = await this.buildSeam().bundled(prepared);
    return digest === null ? null : { ...prepared, build: digest };
  }

  private buildSeam(): BuildSeam {
    if (this.builds === null) throw apiError("app_build_unavailable", "this server does not build npm imports");
    return this.builds;
  }

  /** Queues the build that will publish `request` (202). */
  private async defer(request: BuildRequest): Promise<{ deferred: BuildDeferred }> {
    return { deferred: { buildId: await this.buildSeam().accept(request), appId: request.appId, token: null } };
  }


  /** The app, or null. Does no access check; see `load` for that. */
  async get(id: string): Promise<AppRecord | null> {
    if (!UUID.test(id)) return null;
    return this.live(await findApp(this.db, id));
  }

  /** The app, after checking the id's shape (400 invalid_id), existence (404) and `permission`. */
  async load(id: string, actor: Actor, permission: AppPermission): Promise<{ app: AppRecord; role: AppRole }> {
    const app = await this.find(id);
    const role = requirePermission(await this.roleOf(actor, app), app, permission);
    // A render token is the page's, held by its own code: it views, whoever's page (DECISIONS §3).
    if (actor?.kind === "render" && permission !== "view") throw apiError("forbidden", "a render token opens the app's page; reading or changing the app needs the person's own token or session");
    return { app, role };
  }

  /**
   * The caller's role on the app, or null for none: THE access decision every route goes
   * through (via `load`). Shares, teams and visibility extend it here, with lookups in `this.db`.
   */
  async roleOf(actor: Actor, app: AppRecord): Promise<AppRole | null> {
    let role = directRole(actor, app);
    const userId = actor?.kind === "user" ? actor.userId : actor?.kind === "render" && actor.appId === app.id ? actor.userId : null;
    if (role === "owner" || userId === null) return role;
    for (const source of this.roleSources) role = widest(role, await source(app, userId));
    // The page's own code holds its render token: a team admin's page must not let the app's UI
    // (which any member may write) delete, share or otherwise manage the app on the admin's behalf.
    if (actor?.kind === "render" && role === "team-admin") return "team-member";
    return role;
  }

  /**
   * For an op call: the app as `get` finds it, and the token epoch its caller's bearer token is
   * checked under (Tokens.authenticate), in one query. Null `app` for a malformed id too.
   */
  async getWithTokenEpoch(id: string): Promise<{ app: AppRecord | null; tokenEpoch: number | undefined }> {
    if (!UUID.test(id)) return { app: null, tokenEpoch: undefined };
    const batched = this.batchedReads;
    const load = batched === null ? () => findAppWithTokenEpoch(this.db, id) : async () => (await batched.load(id)) ?? findAppWithTokenEpoch(this.db, id);
    // An absent app is not kept: its create would be an insert, which moves no stamp.
    const { app, tokenEpoch }: { app: AppRecord | null; tokenEpoch: number | undefined } = this.readCache === null ? await load() : await this.readCache.read(id, load, (read) => (read.app === null ? null : recordBytes(read.app)));
    return { app: this.live(app), tokenEpoch };
  }

  /** What the op calls' read cache holds, or null without one. */
  readCacheFootprint(): { values: number; bytes: number } | null {
    return this.readCache?.footprint() ?? null;
  }

  /** The app with no access check: 400 invalid_id for a malformed id, 404 app_not_found if absent. */
  async find(id: string): Promise<AppRecord> {
    if (!UUID.test(id)) throw apiError("invalid_id", `${id} is not an app id (a UUID)`);
    const app = this.live(await findApp(this.db, id));
    if (app === null) throw apiError("app_not_found", `no app ${id}`);
    return app;
  }

  /** An unclaimed app past its 7 days is gone, even in the hour before the reaper removes it. */
  private live(app: AppRecord | null): AppRecord | null {
    return app !== null && app.expiresAt !== null && app.expiresAt <= this.clock.now() ? null : app;
  }

  /** A claimed app by its canonical address `/@handle/manifestId`, or null. */
  async byCanonical(handle: string, manifestId: string): Promise<AppRecord | null> {
    const owner = await this.db.selectFrom("users").select("id").where("handle", "=", handle).executeTakeFirst();
    return owner === undefined ? null : findOwnedByManifestId(this.db, owner.id, manifestId);
  }

  /**
   * POST /app. Anonymous: a new unclaimed app, its one-time token, a 7-day expiry, and a bound
   * pairing when asked. A user: an upsert keyed by (user, manifest id); `pair`/`label` ignored.
   */
  async create(actor: Actor, input: CreateInput): Promise<Deferrable<CreateResult>> {
    if (actor !== null && actor.kind !== "user") {
      throw apiError("unauthorized", `a ${actor.kind} token cannot create apps; send no token for an anonymous create, or a user token`);
    }
    const prepared = await prepareSource({ module: input.module, ui: input.ui, styles: input.styles });
    const ready = await this.withBundle(prepared);
    if (ready === null) return this.createLater(actor, prepared);
    if (actor === null) return this.createAnonymous(ready, input);
    return this.upsert(actor.userId, ready);
  }

  private async createAnonymous(prepared: PreparedSource, input: CreateInput): Promise<CreateResult> {
    const id = newAppId();
    const now = this.clock.now();
    const expiresAt = now + UNCLAIMED_TTL_MS;
    // Group-committed: concurrent anonymous creates share one commit (one fsync on SQLite).
    const { token, pairing } = await this.writes.run(async (trx) => {
      await insertApp(trx, { id, ownerUserId: null, claimedAt: null, expiresAt, now, prepared });
      const issued = await this.tokens.issue("app", { appId: id, ttlMs: UNCLAIMED_TTL_MS }, trx);
      // Pairing plugs in here: a device code bound to this app, minted in the same transaction.
      const bound = input.pair === true && this.pairing !== null ? await this.pairing.startBoundPairing(trx, { appId: id, label: input.label ?? null }) : null;
      return { token: issued.token, pairing: bound };
    });
    const app = newAppRecord({ id, ownerUserId: null, ownerHandle: null, claimedAt: null, expiresAt, now, manifest: prepared.manifest });
    await this.published(app, prepared);
    return { app, warnings: prepared.warnings, created: true, token, pairing };
  }

  /**
   * A create that needs a build. The app's id is reserved now and its row written when the
   * build publishes (spec: no runnable app until then); an anonymous creator gets the app's
   * token now, with the build, since it is shown once. A user's upsert of an existing manifest
   * id becomes an update of that app.
   */
  private async createLater(actor: Actor, prepared: PreparedSource): Promise<{ deferred: BuildDeferred }> {
    if (actor?.kind === "user") {
      const existing = await findOwnedByManifestId(this.db, actor.userId, prepared.manifest.id);
      if (existing !== null) return this.defer({ intent: "update", appId: existing.id, actor, baseRevision: null, prepared, lockFrom: existing.revision });
    }
    const appId = newAppId();
    let token: string | null = null;
    const buildId = await this.buildSeam().accept({ intent: "create", appId, actor, baseRevision: null, prepared, lockFrom: null }, async (trx) => {
      if (actor === null) token = (await this.tokens.issue("app", { appId, ttlMs: UNCLAIMED_TTL_MS }, trx)).token;
    });
    return { deferred: { buildId, appId, token } };
  }

  /**
   * Stores what a build made: the app row for a create, the next revision for an update (over
   * `baseRevision` when the writer gave one). Null when the app moved on or went away meanwhile,
   * or a write that published at once superseded `buildId` (held in the publish's transaction).
   * The builds service checks the writer's authority before calling this.
   */
  async publishBuilt(request: Omit<BuildRequest, "prepared"> & { prepared: PreparedSource; acceptedAt: number; buildId?: string }): Promise<AppRecord | null> {
    const { appId, actor, prepared, buildId } = request;
    const now = this.clock.now();
    const current = async (trx: Kysely<Database>) => buildId === undefined || (await this.buildSeam().holdForPublish(trx, buildId));
    if (request.intent === "create" && (await findApp(this.db, appId)) === null) {
      const owner = actor?.kind === "user" ? actor.userId : null;
      const expiresAt = owner === null ? request.acceptedAt + UNCLAIMED_TTL_MS : null;
      try {
        const app = await this.writeThenRead(appId, async (trx) => {
          if (!(await current(trx))) return false;
          await insertApp(trx, { id: appId, ownerUserId: owner, claimedAt: owner === null ? null : now, expiresAt, now, prepared });
          return true;
        });
        return app === null ? null : this.published(app, prepared);
      } catch (error) {
        // The user made an app with this manifest id meanwhile: the upsert overwrites it, as POST would.
        if (!isUniqueViolation(error) || owner === null) throw error;
        const existing = await findOwnedByManifestId(this.db, owner, prepared.manifest.id);
        if (existing === null) return null;
        return this.publishBuilt({ ...request, intent: "update", appId: existing.id, baseRevision: null });
      }
    }
    const expected = request.baseRevision;
    const app = await this.writeThenRead(appId, async (trx) =>
      !(await current(trx)) ? false : expected === null ? (await bumpRevision(trx, appId, now, prepared)) !== null : commitRevision(trx, appId, expected, now, prepared),
    );
    return app === null ? null : this.published(app, prepared);
  }

  private async upsert(userId: string, prepared: PreparedSource): Promise<CreateResult> {
    // Rarely more than one pass: only a concurrent create or delete of the same key sends us round.
    for (let attempt = 0; attempt < UPSERT_ATTEMPTS; attempt++) {
      const existing = await findOwnedByManifestId(this.db, userId, prepared.manifest.id);
      const now = this.clock.now();
      if (existing !== null) {
        const staged = this.stage(existing, prepared);
        const app = await this.writeThenRead(existing.id, async (trx) => (await this.builds?.supersede(trx, existing.id), (await bumpRevision(trx, existing.id, now, prepared)) !== null));
        if (app !== null) return { app: await this.published(app, prepared, staged), warnings: prepared.warnings, created: false, token: null, pairing: null };
        continue;
      }
      const id = newAppId();
      try {
        // An app made by a signed-in user is owned from birth: claimed at its creation.
        const app = await this.writeThenRead(id, async (trx) => {
          await insertApp(trx, { id, ownerUserId: userId, claimedAt: now, expiresAt: null, now, prepared });
          return true;
        });
        if (app !== null) return { app: await this.published(app, prepared), warnings: prepared.warnings, created: true, token: null, pairing: null };
      } catch (error) {
        // A concurrent create of the same manifest id won the unique index; overwrite it instead.
        if (!isUniqueViolation(error)) throw error;
      }
    }
    throw apiError("service_busy", "the app is being written by other requests; retry");
  }

  /**
   * PUT /app/{id}: replaces the source; the manifest id cannot change; If-Match optional.
   * `within` runs in the same transaction after the new revision is stored (a restore's data).
   */
  async update(id: string, actor: Actor, source: SourceBundle, options: UpdateOptions = {}): Promise<Deferrable<WriteResult>> {
    const { ifMatch, within } = options;
    const { app } = await this.load(id, actor, "source:write");
    // PUT needs no precondition (last write wins), but one that is sent is honoured as on PATCH.
    const expected = ifMatch === undefined ? null : expectedRevision(ifMatch, undefined, app.revision, this.sourceUrl(id));
    if (expected !== null && expected !== app.revision) throw revisionMismatch(this.sourceUrl(id), expected, app.revision);
    const source_ = await prepareSource(source);
    assertSameManifestId(app.manifestId, source_.manifest.id);
    const prepared = await this.withBundle(source_);
    if (prepared === null) {
      // Data restored with code must land in the code's transaction; a build cannot hold one open.
      if (within !== undefined) throw apiError("version_not_restorable", "this revision's bundle is no longer kept; restore its code without the snapshot first, then the snapshot");
      return this.defer({ intent: options.intent ?? "update", appId: id, actor, baseRevision: expected, prepared: source_, lockFrom: options.lockFrom ?? app.revision });
    }
    const now = this.clock.now();
    const staged = this.stage(app, prepared);
    const updated = await this.writeThenRead(id, async (trx) => {
      // Newer than any build of the app waiting or running (DECISIONS §10): those are superseded.
      await this.builds?.supersede(trx, id);
      const stored = expected === null ? (await bumpRevision(trx, id, now, prepared)) !== null : await commitRevision(trx, id, expected, now, prepared);
      if (stored && within !== undefined) await within(trx);
      return stored;
    });
    if (updated === null) {
      if (expected === null) throw apiError("app_not_found", `no app ${id}`);
      throw revisionMismatch(this.sourceUrl(id), expected, (await this.mustFind(id)).revision);
    }
    return { app: await this.published(updated, prepared, staged), warnings: prepared.warnings };
  }

  /** GET /app/{id}/source. */
  async readSource(id: string, actor: Actor): Promise<ActiveCode & { app: AppRecord }> {
    const { app } = await this.load(id, actor, "source:read");
    const code = await this.codeAt(id, app.revision);
    if (code === null) throw new Error(`app ${id} has no source for its revision ${app.revision}`);
    return { ...code, app };
  }

  /**
   * PATCH /app/{id}/source: exact-string edits applied atomically against `expected`, which the
   * caller read from a source response's ETag. A stale revision, or losing the race to another
   * writer of the same revision, is 412 `revision_mismatch` carrying the current ETag.
   */
  async patchSource(id: string, actor: Actor, edits: SourceEdit[], precondition: { ifMatch?: string; expectedRevision?: number }): Promise<Deferrable<WriteResult>> {
    const { app } = await this.load(id, actor, "source:write");
    const expected = expectedRevision(precondition.ifMatch, precondition.expectedRevision, app.revision, this.sourceUrl(id));
    checkEditsSize(edits);
    if (expected !== app.revision) throw revisionMismatch(this.sourceUrl(id), expected, app.revision);
    const current = await this.codeAt(id, app.revision);
    if (current === null) throw new Error(`app ${id} has no source for its revision ${app.revision}`);
    const edited = await prepareSource(applyEdits(current, edits));
    assertSameManifestId(app.manifestId, edited.manifest.id);
    const prepared = await this.withBundle(edited);
    if (prepared === null) return this.defer({ intent: "update", appId: id, actor, baseRevision: expected, prepared: edited, lockFrom: app.revision });
    const staged = this.stage(app, prepared);
    const updated = await this.writeThenRead(id, async (trx) => (await this.builds?.supersede(trx, id), commitRevision(trx, id, expected, this.clock.now(), prepared)));
    if (updated === null) {
      const latest = await this.mustFind(id);
      throw revisionMismatch(this.sourceUrl(id), expected, latest.revision);
    }
    return { app: await this.published(updated, prepared, staged), warnings: prepared.warnings };
  }

  /** Offers the code a write is about to commit to the isolate builder (StagingSeam). */
  private stage(app: AppRecord, prepared: PreparedSource): StagedBuild | null {
    return this.staging?.stage(app, prepared) ?? null;
  }

  private async published(app: AppRecord, prepared: PreparedSource, staged: StagedBuild | null = null): Promise<AppRecord> {
    await this.events.emit({ type: "published", appId: app.id, revision: app.revision, warnings: prepared.warnings, ...(staged === null ? {} : { staged }) });
    return app;
  }

  /**
   * Runs `write` and, when it reports success, reads the app back in the same transaction, so
   * the record returned is exactly what this write produced, not a later writer's.
   */
  private writeThenRead(id: string, write: (trx: Kysely<Database>) => Promise<boolean>): Promise<AppRecord | null> {
    return this.db.transaction().execute(async (trx) => ((await write(trx)) ? findApp(trx, id) : null));
  }


  private sourceUrl(id: string): string {
    return `${uuidUrl(this.config.baseUrl, id)}/source`;
  }

  /** The code the app runs now: its current revision's source and manifest. Null if no such app. */
  async activeCode(appId: string): Promise<ActiveCode | null> {
    const app = await this.get(appId);
    return app === null ? null : this.codeAt(appId, app.revision);
  }

  /** The source and manifest of one revision, or null when that revision is not kept. */
  async codeAt(appId: string, revision: number): Promise<ActiveCode | null> {
    return findVersion(this.db, appId, revision);
  }

  /** GET /app for a user: their apps newest first, `limit` per page, `cursor` from the last page. */
  list(userId: string, limit: number, cursor: string | null, search: string | null = null): Promise<{ rows: ListedApp[]; nextCursor: string | null }> {
    return listApps(this.db, userId, limit, cursor, search);
  }

  /** POST /app/{id}/claim: the signed-in `userId` takes the app by presenting its per-app token. */
  async claim(id: string, userId: string, token: string, audit?: AuditContext): Promise<AppRecord> {
    const app = await this.find(id);
    return claimApp({ db: this.db, now: this.clock.now(), baseUrl: this.config.baseUrl, pairing: this.pairing }, app, userId, token, audit);
  }

  /** Ids of unclaimed apps whose 7 days are over at `now`; the reaper removes them. */
  async expiredUnclaimed(now: number, limit = 500): Promise<string[]> {
    const rows = await this.db
      .selectFrom("apps")
      .select("id")
      .where("owner_user_id", "is", null)
      .where("expires_at", "is not", null)
      .where("expires_at", "<=", now)
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }

  /** PUT /app/{id}/icon: an explicit icon overrides the manifest's; null goes back to it. */
  async setIcon(id: string, actor: Actor, icon: { emoji: string; bg: string } | null): Promise<AppRecord> {
    await this.load(id, actor, "manage");
    let override: Icon | null = null;
    if (icon !== null) {
      const problem = iconProblem(icon);
      if (problem !== null) throw apiError("invalid_icon", problem);
      override = normalizeIcon(icon).icon;
    }
    await this.db
      .updateTable("apps")
      .set({ icon_override: override === null ? null : JSON.stringify(override), updated_at: this.clock.now() })
      .where("id", "=", id)
      .execute();
    return this.mustFind(id);
  }

  /**
   * PUT /app/{id}/visibility and /starter-prompt: owner settings of a claimed app. The spec says
   * 403 for anyone but the owner, and for an anonymous-owned app.
   */
  async setSettings(id: string, actor: Actor, fields: { visibility?: Visibility; starterPrompt?: string | null }): Promise<AppRecord> {
    await this.load(id, actor, "manage");
    await this.db
      .updateTable("apps")
      .set({
        ...(fields.visibility === undefined ? {} : { visibility: fields.visibility }),
        ...(fields.starterPrompt === undefined ? {} : { starter_prompt: fields.starterPrompt }),
        updated_at: this.clock.now(),
      })
      .where("id", "=", id)
      .execute();
    return this.mustFind(id);
  }

  /** DELETE /app/{id} (owner); `audit`: who asked and from where, recorded with the deletion. */
  async delete(id: string, actor: Actor, audit?: AuditContext): Promise<void> {
    await this.load(id, actor, "manage");
    await this.deleteById(id, undefined, audit);
  }

  /**
   * Removes an app with every row it owns, then tells the `deleted` listeners. No access check.
   * Given `unclaimedExpiredAt` (the reaper), only if the app is still unclaimed and expired then:
   * a claim may have come since the reaper looked. Given `audit` (someone asked for it), its audit
   * row (DECISIONS §15) commits with the deletion; the reaper's expiries are not audited.
   */
  async deleteById(id: string, unclaimedExpiredAt?: number, audit?: AuditContext): Promise<boolean> {
    const removed = await this.db.transaction().execute(async (trx) => {
      const app = await trx.selectFrom("apps").select(["manifest_id", "owner_user_id"]).where("id", "=", id).executeTakeFirst();
      const gone = await deleteAppRows(trx, id, unclaimedExpiredAt);
      if (gone && audit !== undefined) {
        await writeAudit(trx, this.clock.now(), audit, { action: "app.delete", target: { kind: "app", id }, detail: { manifestId: app?.manifest_id ?? null, owner: app?.owner_user_id ?? null } });
      }
      return gone;
    });
    if (removed) await this.events.emit({ type: "deleted", appId: id });
    return removed;
  }

  async mustFind(id: string): Promise<AppRecord> {
    const app = await findApp(this.db, id);
    if (app === null) throw apiError("app_not_found", `no app ${id}`);
    return app;
  }
}
