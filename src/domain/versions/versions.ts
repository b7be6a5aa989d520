import type { BuildDeferred } from "../apps/build-seam.ts";
import type { Kysely } from "kysely";
import { apiError, type Plan } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import type { Actor } from "../access/access.ts";
import type { Apps, WriteResult } from "../apps/apps.ts";
import type { Manifest } from "../source/manifest-types.ts";
import { expectedRevision } from "../apps/precondition.ts";
import { revisionEtag, uuidUrl } from "../apps/urls.ts";
import { PLAN_LIMITS } from "../../config/plans.ts";
import type { Secrets } from "../secrets/secrets.ts";
import type { DataChanges, Snapshots } from "../snapshots/snapshots.ts";


/** No plan keeps fewer revisions than this. */
const FEWEST_KEPT = Math.min(...Object.values(PLAN_LIMITS).map((limits) => limits.version_history));
/** Why a kept revision cannot be restored as it is (DECISIONS §9). */
export type NotRestorable =
  /** Its manifest names another id than the app has now: restoring would rename the app. */
  | { reason: "manifest_id_changed"; manifestId: string }
  /** A routine or webhook calls an operation that revision does not declare; `force` restores anyway. */
  | { reason: "operation_in_use"; operations: string[] };

export interface VersionRow {
  revision: number;
  createdAt: number;
  sizeBytes: number;
  restorable: boolean;
  /** Present when `restorable` is false. */
  notRestorable?: NotRestorable;
}

export interface RestoreResult extends WriteResult {
  restoredFrom: number;
  /** Secrets the restored code reads (`env.NAME`) that the app has no value for now. */
  unsetSecrets: string[];
}

// Names the code reads from env, found in its text (never by running it). The capability
// bindings are not secrets.
const ENV_READ = /\benv\s*(?:\.\s*([A-Z][A-Z0-9_]{0,63})\b|\[\s*["']([A-Z][A-Z0-9_]{0,63})["']\s*\])/g;
const BINDINGS = new Set(["KV", "BLOB", "LOG"]);

/**
 * Every revision's source, kept up to the owner's plan's `version_history` count (spec; DECISIONS
 * §9): listing, reading one, and restoring one as a new revision. Pruning never refuses a write:
 * after each publish the revisions past the count go.
 */
export class Versions {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly apps: Apps,
    private readonly secrets: Secrets,
    private readonly snapshots: Snapshots,
    private readonly baseUrl: () => string,
  ) {}

  /** `dry_run`: what restoring `snapshot` with this revision would change in the app's data; nothing changes. */
  async dryRun(appId: string, revision: string, actor: Actor, snapshot: string): Promise<DataChanges> {
    const { app } = await this.apps.load(appId, actor, "source:write");
    const n = parseRevision(revision);
    if ((await this.apps.codeAt(app.id, n)) === null) throw missing(app.revision, n);
    return this.snapshots.changes(app.id, snapshot);
  }

  /**
   * Keeps the newest `version_history` revisions of the app; the `published` listener calls it
   * with the revision just published. Up to FEWEST_KEPT there is nothing any plan would drop, so
   * a create (revision 1) and an app's early writes read and delete nothing.
   */
  async prune(appId: string, published?: number): Promise<number> {
    if (published !== undefined && published <= FEWEST_KEPT) return 0;
    const app = await this.apps.get(appId);
    if (app === null) return 0;
    const keep = PLAN_LIMITS[await this.planOf(app.ownerUserId)].version_history;
    // A published template's revision stays: copies of the template are made from it.
    const pinned = await this.db.selectFrom("template_listings").select("published_revision").where("app_id", "=", appId).where("enabled", "=", 1).executeTakeFirst();
    let prune = this.db.deleteFrom("app_versions").where("app_id", "=", appId).where("revision", "<=", app.revision - keep);
    if (pinned?.published_revision != null) prune = prune.where("revision", "!=", pinned.published_revision);
    const result = await prune.executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** GET /app/{id}/versions: newest first, with whether each can be restored today and why not. */
  async list(appId: string, actor: Actor): Promise<VersionRow[]> {
    const { app } = await this.apps.load(appId, actor, "source:read");
    const rows = await this.db
      .selectFrom("app_versions")
      .select(["revision", "created_at", "size_bytes", "manifest"])
      .where("app_id", "=", app.id)
      .orderBy("revision", "desc")
      .execute();
    const used = await this.operationsInUse(app.id);
    return rows.map((row) => {
      const problem = Number(row.revision) === app.revision ? null : notRestorable(JSON.parse(row.manifest) as Manifest, app.manifestId, used);
      return {
        revision: Number(row.revision),
        createdAt: Number(row.created_at),
        sizeBytes: Number(row.size_bytes),
        restorable: problem === null,
        ...(problem === null ? {} : { notRestorable: problem }),
      };
    });
  }

  /** GET /app/{id}/versions/{revision}: that revision's source. */
  async get(appId: string, revision: string, actor: Actor) {
    const { app } = await this.apps.load(appId, actor, "source:read");
    const n = parseRevision(revision);
    const code = await this.apps.codeAt(app.id, n);
    if (code === null) throw missing(app.revision, n);
    return { app, code };
  }

  /**
   * POST /app/{id}/versions/{revision}/restore: the old source becomes revision N+1 under the
   * same precondition as any source edit (If-Match or expected_revision), so of two concurrent
   * restores (or a restore and an edit) against the same revision exactly one wins.
   */
  async restore(
    appId: string,
    revision: string,
    actor: Actor,
    o: { ifMatch?: string; expectedRevision?: number; force?: boolean; snapshot?: string },
  ): Promise<RestoreResult | { deferred: BuildDeferred }> {
    const { app } = await this.apps.load(appId, actor, "source:write");
    const n = parseRevision(revision);
    const expected = expectedRevision(o.ifMatch, o.expectedRevision, app.revision, `${uuidUrl(this.baseUrl(), app.id)}/source`);
    const code = await this.apps.codeAt(app.id, n);
    if (code === null) throw missing(app.revision, n);
    const problem = notRestorable(code.manifest, app.manifestId, await this.operationsInUse(app.id));
    if (problem !== null && !(problem.reason === "operation_in_use" && o.force === true)) {
      const why =
        problem.reason === "manifest_id_changed"
          ? `revision ${n} declares manifest id "${problem.manifestId}", and this app's is "${app.manifestId}"`
          : `routines or webhooks call ${problem.operations.join(", ")}, which revision ${n} does not declare; send force: true to restore anyway (they will fail until you change them)`;
      throw apiError("version_not_restorable", why, { details: { ...problem } });
    }
    // An update under If-Match: the same guard, validation and publish as any source write; a
    // snapshot's data goes back in the same transaction, so code and data never disagree.
    let changedKeys: string[] = [];
    const snapshot = o.snapshot;
    if (snapshot !== undefined) await this.snapshots.beforeRestore(snapshot);
    const written = await this.apps.update(
      app.id,
      actor,
      { module: code.module, ui: code.ui, styles: code.styles },
      {
        ifMatch: revisionEtag(expected),
        within: snapshot === undefined ? undefined : async (trx) => void (changedKeys = await this.snapshots.restoreInto(trx, app.id, snapshot)),
        // A revision whose bundle is no longer kept is built again with the versions it ran.
        intent: "restore",
        lockFrom: n,
      },
    );
    if ("deferred" in written) return written;
    if (snapshot !== undefined) this.snapshots.restored(app.id, changedKeys);
    const unsetSecrets = await this.unsetSecrets(app.ownerUserId, app.manifestId, code.module);
    return { ...written, restoredFrom: n, unsetSecrets };
  }

  private async unsetSecrets(ownerUserId: string | null, manifestId: string, module: string): Promise<string[]> {
    const read = new Set<string>();
    for (const match of module.matchAll(ENV_READ)) {
      const name = match[1] ?? match[2];
      if (name !== undefined && !BINDINGS.has(name)) read.add(name);
    }
    if (read.size === 0) return [];
    const set = ownerUserId === null ? [] : await this.secrets.names({ ownerUserId, manifestId });
    return [...read].filter((name) => !set.includes(name)).sort();
  }

  /** Operations that routines and webhooks of the app call. */
  private async operationsInUse(appId: string): Promise<Set<string>> {
    const routines = await this.db.selectFrom("routines").select("op").where("app_id", "=", appId).execute();
    const hooks = await this.db.selectFrom("webhooks").select("op").where("app_id", "=", appId).execute();
    return new Set([...routines, ...hooks].map((r) => r.op));
  }

  private async planOf(ownerUserId: string | null): Promise<Plan> {
    if (ownerUserId === null) return "free";
    const row = await this.db.selectFrom("users").select("plan").where("id", "=", ownerUserId).executeTakeFirst();
    return (row?.plan ?? "free") as Plan;
  }
}

function notRestorable(manifest: Manifest, currentId: string, used: Set<string>): NotRestorable | null {
  if (manifest.id !== currentId) return { reason: "manifest_id_changed", manifestId: manifest.id };
  const gone = [...used].filter((op) => !(op in manifest.routes)).sort();
  return gone.length === 0 ? null : { reason: "operation_in_use", operations: gone };
}

function parseRevision(revision: string): number {
  if (!/^[1-9][0-9]{0,14}$/.test(revision)) throw apiError("invalid_revision", `revision must be a positive integer; got ${revision.slice(0, 40)}`);
  return Number(revision);
}

/** A revision the app never reached is unknown; one it passed and no longer keeps was pruned. */
function missing(current: number, revision: number) {
  if (revision > current) return apiError("not_found", `this app is at revision ${current}; there is no revision ${revision} yet`);
  return apiError("version_history_unavailable", `revision ${revision} is past the versions this app's plan keeps; the oldest kept ones are listed by GET /app/{id}/versions`);
}
