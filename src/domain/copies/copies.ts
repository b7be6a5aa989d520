import { createHash } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { DAY, type Clock } from "../../config/clock.ts";
import { apiError, recovery } from "../../errors/index.ts";
import { isUniqueViolation, type Database } from "../../store/index.ts";
import { can, type Actor } from "../access/access.ts";
import { newAppId } from "../ids.ts";
import type { Apps } from "../apps/apps.ts";
import { MANIFEST_ID_MAX, MANIFEST_ID_PATTERN } from "../source/validate-manifest.ts";
import { findOwnedByManifestId, insertApp, type AppRecord } from "../apps/queries.ts";
import type { BuildDeferred, BuildSeam, CopyPlan } from "../apps/build-seam.ts";
import { prepareRenamed, type PreparedSource } from "../source/source.ts";
import { canonicalUrl } from "../apps/urls.ts";
import type { Secrets } from "../secrets/secrets.ts";
import type { Templates } from "../templates/templates.ts";
import { ownAssets, type Assets, type StagedAsset } from "../app-page/assets.ts";
import { refuseSuspended } from "../apps/suspended.ts";
import type { ContentObjects } from "../../blobs/objects.ts";
import { KEY_COST_SQL } from "../../runtime/index.ts";

/** Spec Limits: a copy with data carries at most 24 MiB (KV values, blobs and assets together). */
export const COPY_DATA_MAX_BYTES = 24 * 1024 * 1024;
/** DECISIONS §9: an idempotency key answers with its first result for 24 hours. */
export const COPY_IDEMPOTENCY_MS = DAY;

export interface CopyInput {
  manifest_id?: string;
  display_name?: string;
  idempotency_key?: string;
  include_data?: boolean;
}

export interface CopyResult {
  app: AppRecord;
  sourceAppId: string;
  copyKind: "app" | "template";
  /** Only when this call copied data (never on a replay). */
  copiedData?: { keys: number; assets: number };
  /** The source's secret names, only for callers who manage the source's secrets. */
  secretsNotCopied?: string[];
}

/**
 * `POST /app/{id}/copy` (spec; DECISIONS §9): a new private app of the caller's with the source's
 * current code and, with `include_data`, its KV, blobs and assets, all inserted in one
 * transaction, so a crash leaves no app or a whole one. Who may copy: anyone who may read the
 * source (owner, team members, collaborators), anyone signed in for a published template (its
 * published revision), and anyone for a public app its owner marked remixable; an unclaimed app
 * is nobody's to give. Data goes only to callers with write access.
 * Secrets never travel; the response names them to those who manage the source.
 */
export class Copies {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly assets: Assets,
    private readonly secrets: Secrets,
    private readonly templates: Templates,
    private readonly builds: BuildSeam,
    private readonly baseUrl: () => string,
    /** S3: the source's blob objects, which the copy refers to as well (null: blobs in their rows). */
    private readonly objects: ContentObjects | null = null,
  ) {}

  async copy(sourceId: string, userId: string, input: CopyInput): Promise<CopyResult | { deferred: BuildDeferred }> {
    const source = await this.apps.find(sourceId);
    // A suspended app's code does not get a second life as a copy (or a template's).
    refuseSuspended(source);
    const actor: Actor = { kind: "user", userId };
    if (source.ownerUserId === null) throw apiError("anon_not_remixable", "this app is unclaimed; only an app someone owns can be copied");
    const role = await this.apps.roleOf(actor, source);
    const reader = can(role, "source:read");
    // A published template is anyone's to build from, at the revision it was published at.
    const template = reader ? null : await this.templates.publishedListing(source.id);
    if (!reader && template === null && !(source.visibility === "public" && source.remixable)) {
      throw apiError("forbidden", "you cannot read this app's source, and its owner has not made it remixable");
    }
    const copyKind = template === null ? "app" : "template";
    if (input.include_data === true && !can(role, "source:write")) throw apiError("copy_data_forbidden", "copying an app's data needs write access to it; copy without include_data");
    if (input.manifest_id !== undefined && (input.manifest_id.length > MANIFEST_ID_MAX || !MANIFEST_ID_PATTERN.test(input.manifest_id))) {
      throw apiError("invalid_request", `manifest_id must be kebab-case (${MANIFEST_ID_PATTERN.source}, at most ${MANIFEST_ID_MAX} characters)`);
    }
    const secretsNotCopied = can(role, "manage") ? await this.secrets.names({ ownerUserId: source.ownerUserId, manifestId: source.manifestId }) : undefined;
    const finish = (app: AppRecord, copiedData?: CopyResult["copiedData"]): CopyResult => ({
      app,
      sourceAppId: source.id,
      copyKind,
      ...(copiedData === undefined ? {} : { copiedData }),
      ...(secretsNotCopied === undefined ? {} : { secretsNotCopied }),
    });

    const bodyHash = createHash("sha256")
      .update(JSON.stringify([input.manifest_id ?? null, input.display_name ?? null, input.include_data === true]))
      .digest("hex");
    const key = input.idempotency_key;
    // A copy that needs a build is recorded under its key only when it publishes: until then the
    // build itself answers for it (a retry had started a second build, which then failed).
    const buildKey = key === undefined ? undefined : `copy:${userId}:${source.id}:${key}`;
    if (key !== undefined && buildKey !== undefined) {
      const replayed = await this.replay(userId, source.id, key, bodyHash);
      if (replayed !== null) return finish(replayed);
      const building = await this.builds.activeByKey(buildKey);
      if (building !== null) {
        if (building.copy?.idempotency?.bodyHash !== bodyHash) throw apiError("idempotency_conflict", "this idempotency_key was used for a copy with other fields; use a new key");
        return { deferred: { buildId: building.buildId, appId: building.appId, token: null } };
      }
    }
    const manifestId = input.manifest_id ?? source.manifestId;
    await this.refuseTaken(userId, manifestId, source, input.manifest_id === undefined);

    const revision = template?.publishedRevision ?? source.revision;
    const code = await this.apps.codeAt(source.id, revision);
    if (code === null) throw new Error(`app ${source.id} has no source for revision ${revision}`);
    const renamed = await prepareRenamed(
      { module: code.module, ui: code.ui, styles: code.styles },
      { ...(manifestId === code.manifest.id ? {} : { id: manifestId }), ...(input.display_name === undefined ? {} : { displayName: input.display_name }) },
    );
    const id = newAppId();
    const plan: CopyPlan = { sourceAppId: source.id, includeData: input.include_data === true, copyKind };
    // Renaming changes the module's text, so a copy of an app with npm imports has a bundle of
    // its own to make (the same packages: the source revision's lock is kept). Its data, if it
    // asked for it, comes over when that build publishes (spec: Copy response and build status).
    const prepared = await this.bundled(renamed);
    if (prepared === null) {
      if (input.include_data === true) await this.stageData(source.id, null);
      const idempotent = key === undefined || buildKey === undefined ? {} : { idempotencyKey: buildKey };
      const copy: CopyPlan = key === undefined ? plan : { ...plan, idempotency: { key, bodyHash } };
      const buildId = await this.builds.accept({ intent: "copy", appId: id, actor, baseRevision: null, prepared: renamed, lockFrom: revision, lockFromApp: source.id, copy, ...idempotent });
      return { deferred: { buildId, appId: id, token: null } };
    }
    let copied: CopyResult["copiedData"];
    try {
      copied = await this.insertCopy(id, userId, prepared, plan, key === undefined ? null : { key, bodyHash });
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // A concurrent request won: the same key (answer with its app) or the same manifest id.
      if (key !== undefined) {
        const replayed = await this.replay(userId, source.id, key, bodyHash);
        if (replayed !== null) return finish(replayed);
      }
      await this.refuseTaken(userId, manifestId, source, input.manifest_id === undefined);
      // Taken and gone again in between: nothing holds it now, so a retry may go through.
      throw apiError("service_busy", "another write took this copy's manifest id a moment ago; retry");
    }
    const app = await this.apps.mustFind(id);
    await this.apps.events.emit({ type: "published", appId: id, revision: app.revision, warnings: prepared.warnings });
    return finish(app, copied);
  }

  /** The source with its bundle's digest when it has npm imports and that bundle exists; null when it must be built. */
  private async bundled(prepared: PreparedSource): Promise<PreparedSource | null> {
    if (prepared.imports.npm.length === 0) return prepared;
    const digest = await this.builds.bundled(prepared);
    return digest === null ? null : { ...prepared, build: digest };
  }

  /**
   * The copy's app row, its data when the plan carries it, the template's builder count and the
   * idempotency record, in one transaction: a crash leaves no copy or a whole one.
   */
  private async insertCopy(id: string, userId: string, prepared: PreparedSource, plan: CopyPlan, idempotency: { key: string; bodyHash: string } | null) {
    const staged = plan.includeData ? await this.stageData(plan.sourceAppId, id) : null;
    // The objects the copy will refer to stay out of the object sweep's reach meanwhile.
    if (plan.includeData) await this.objects?.touchApp(plan.sourceAppId);
    const now = this.clock.now();
    let copied: CopyResult["copiedData"];
    try {
      await this.db.transaction().execute(async (trx) => {
        await insertApp(trx, { id, ownerUserId: userId, claimedAt: now, expiresAt: null, now, prepared, copiedFrom: plan.sourceAppId });
        if (staged !== null) copied = await this.copyData(trx, plan.sourceAppId, id, staged, now);
        if (plan.copyKind === "template") await this.templates.recordBuilder(plan.sourceAppId, userId, trx);
        if (idempotency !== null) {
          await trx
            .insertInto("copy_requests")
            .values({ user_id: userId, source_app_id: plan.sourceAppId, idempotency_key: idempotency.key, body_hash: idempotency.bodyHash, app_id: id, created_at: now })
            .execute();
        }
      });
    } catch (error) {
      if (staged !== null) await this.assets.discard(staged);
      throw error;
    }
    return copied;
  }

  /**
   * A copy whose build finished (the builds service calls this): stored with its data as any
   * copy. Null when its source is gone meanwhile; the build then ends canceled.
   */
  async publishBuilt(input: { appId: string; userId: string; prepared: PreparedSource; plan: CopyPlan }): Promise<AppRecord | null> {
    const source = await this.apps.get(input.plan.sourceAppId);
    if (source === null) return null;
    // Who may copy is decided again: access taken away while the copy was built takes the copy too.
    const role = await this.apps.roleOf({ kind: "user", userId: input.userId }, source);
    const mayRead =
      can(role, "source:read") ||
      (input.plan.copyKind === "template" && (await this.templates.publishedListing(source.id)) !== null) ||
      (source.visibility === "public" && source.remixable);
    if (!mayRead || (input.plan.includeData && !can(role, "source:write"))) {
      throw apiError("app_build_authority_lost", "you can no longer copy this app (or its data), so the copy was not made");
    }
    await this.insertCopy(input.appId, input.userId, input.prepared, input.plan, input.plan.idempotency ?? null);
    const app = await this.apps.mustFind(input.appId);
    await this.apps.events.emit({ type: "published", appId: app.id, revision: app.revision, warnings: input.prepared.warnings });
    return app;
  }

  /** PUT /app/{id}/remixable: the owner lets anyone copy the app while it is public. */
  async setRemixable(appId: string, actor: Actor, remixable: boolean): Promise<boolean> {
    const { app } = await this.apps.load(appId, actor, "manage");
    await this.db.updateTable("apps").set({ remixable: remixable ? 1 : 0, updated_at: this.clock.now() }).where("id", "=", app.id).execute();
    return remixable;
  }

  /** The app an earlier request with this key made, or null; another body under the key is 409. */
  private async replay(userId: string, sourceId: string, key: string, bodyHash: string): Promise<AppRecord | null> {
    const row = await this.db
      .selectFrom("copy_requests")
      .selectAll()
      .where("user_id", "=", userId)
      .where("source_app_id", "=", sourceId)
      .where("idempotency_key", "=", key)
      .executeTakeFirst();
    if (row === undefined) return null;
    if (Number(row.created_at) <= this.clock.now() - COPY_IDEMPOTENCY_MS) {
      await this.db.deleteFrom("copy_requests").where("user_id", "=", userId).where("source_app_id", "=", sourceId).where("idempotency_key", "=", key).execute();
      return null;
    }
    if (row.body_hash !== bodyHash) throw apiError("idempotency_conflict", "this idempotency_key was used for a copy with other fields; use a new key");
    return this.apps.get(row.app_id);
  }

  /** 409 when the caller already holds the manifest id: their earlier copy of this source, or another app. */
  private async refuseTaken(userId: string, manifestId: string, source: AppRecord, defaultedId: boolean): Promise<void> {
    const existing = await findOwnedByManifestId(this.db, userId, manifestId);
    if (existing === null) return;
    const url = canonicalUrl(this.baseUrl(), existing);
    if (defaultedId && existing.copiedFrom === source.id) {
      throw apiError("duplicate_remix", "you copied this app already; open that copy, or send manifest_id to make another", {
        existingAppId: existing.id,
        recovery: recovery.openExisting(existing.id, url),
      });
    }
    throw apiError("manifest_id_conflict", `you already have an app with manifest id ${manifestId}`, {
      existingAppId: existing.id,
      recovery: recovery.rename("send another manifest_id for the copy"),
    });
  }

  /** Checks the 24 MiB cap on what would be carried, then writes the assets' bytes for the copy. */
  private async stageData(sourceId: string, copyId: string): Promise<StagedAsset[]>;
  /** With no copy id: only the cap check (a copy whose data comes over when its build publishes). */
  private async stageData(sourceId: string, copyId: null): Promise<null>;
  private async stageData(sourceId: string, copyId: string | null): Promise<StagedAsset[] | null> {
    const [kv, blobs, assets] = await Promise.all([
      this.db.selectFrom("app_kv").select(sql<number>`coalesce(sum(size), 0)`.as("bytes")).where("app_id", "=", sourceId).executeTakeFirstOrThrow(),
      this.db.selectFrom("app_blobs").select(sql<number>`coalesce(sum(size), 0)`.as("bytes")).where("app_id", "=", sourceId).executeTakeFirstOrThrow(),
      this.db.selectFrom("assets").select(sql<number>`coalesce(sum(size_bytes), 0)`.as("bytes")).where("app_id", "=", sourceId).where(ownAssets).executeTakeFirstOrThrow(),
    ]);
    const total = Number(kv.bytes) + Number(blobs.bytes) + Number(assets.bytes);
    if (total > COPY_DATA_MAX_BYTES) {
      throw apiError("copy_data_too_large", `the app holds ${total} bytes of data; a copy carries at most ${COPY_DATA_MAX_BYTES}`, {
        limit: COPY_DATA_MAX_BYTES,
        recovery: recovery.shrink("payload", total, COPY_DATA_MAX_BYTES),
      });
    }
    return copyId === null ? null : this.assets.stageCopies(sourceId, copyId);
  }

  /** KV values, blobs, their usage total and the staged assets' rows, inside the copy's transaction. */
  private async copyData(trx: Kysely<Database>, from: string, to: string, staged: readonly StagedAsset[], now: number): Promise<{ keys: number; assets: number }> {
    // Typed literals in the SELECT list: PostgreSQL cannot infer a bare parameter's type there.
    const app = sql<string>`cast(${to} as text)`.as("app_id");
    const at = sql<number>`cast(${now} as bigint)`.as("updated_at");
    const keys = await trx
      .insertInto("app_kv")
      .columns(["app_id", "key", "value", "size", "updated_at"])
      .expression(trx.selectFrom("app_kv").select([app, "key", "value", "size", at]).where("app_id", "=", from))
      .executeTakeFirst();
    await trx
      .insertInto("app_blobs")
      .columns(["app_id", "key", "data", "object_hash", "content_type", "size", "updated_at"])
      .expression(trx.selectFrom("app_blobs").select([app, "key", "data", "object_hash", "content_type", "size", at]).where("app_id", "=", from))
      .execute();
    const cost = sql.raw<number>(KEY_COST_SQL).as("cost");
    const used = await trx
      .selectFrom((eb) =>
        eb
          .selectFrom("app_kv")
          .select(["size", cost])
          .where("app_id", "=", to)
          .unionAll(eb.selectFrom("app_blobs").select(["size", cost]).where("app_id", "=", to))
          .as("sizes"),
      )
      .select([sql<number>`coalesce(sum(size), 0)`.as("bytes"), sql<number>`coalesce(sum(cost), 0)`.as("key_bytes")])
      .executeTakeFirstOrThrow();
    await trx
      .insertInto("app_storage_usage")
      .values({ app_id: to, bytes: Number(used.bytes), key_bytes: Number(used.key_bytes) })
      .execute();
    await this.assets.insertCopies(trx, to, staged, now);
    return { keys: Number(keys.numInsertedOrUpdatedRows ?? 0n), assets: staged.length };
  }
}
