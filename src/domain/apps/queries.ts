import { sql, type Expression, type ExpressionBuilder, type Kysely, type SelectQueryBuilder, type SqlBool } from "kysely";
import type { Plan } from "../../errors/index.ts";
import { PreparedQuery, type Database } from "../../store/index.ts";
import type { Icon } from "../source/icon.ts";
import type { Visibility } from "../access/access.ts";
import type { Manifest } from "../source/manifest-types.ts";
import type { PreparedSource } from "../source/source.ts";

/** An app as the rest of Brickyard sees it (no source; see `Apps.activeCode`). */
export interface AppRecord {
  id: string;
  manifestId: string;
  displayName: string;
  /** Null while unclaimed. */
  ownerUserId: string | null;
  ownerHandle: string | null;
  claimedAt: number | null;
  /** Unclaimed apps: when the reaper removes them. */
  expiresAt: number | null;
  revision: number;
  manifest: Manifest;
  /** The icon to draw: the owner's PUT /icon override, else the manifest's, else null (brick). */
  icon: Icon | null;
  /** Who may open the page beyond the owner (DECISIONS §3). */
  visibility: Visibility;
  /** Leads the open-in-chat and copy-prompt text; null when unset. */
  starterPrompt: string | null;
  /** Anyone may copy it while it is public. */
  remixable: boolean;
  /** The app this one was copied from, or null. */
  copiedFrom: string | null;
  createdAt: number;
  updatedAt: number;
  /**
   * Bumped by every committed write of the app's values on PostgreSQL (migration 020); 0 on
   * SQLite. As of the read: an op call's app may be a cached read, so the runtime reads the
   * version and usage it acts on itself (AppStorage.seenUsage).
   */
  dataVersion: number;
  /** Bytes the app's values take, read with `dataVersion` from the same row. */
  storedBytes: number;
  /**
   * The owning account's plan and age and the version of the app's secrets scope, read in the
   * same query as the app: an op call needs them (run ceilings, lane, isolate identity) and would
   * otherwise read them again. Absent on a record built without reading (a create) and while
   * unclaimed.
   */
  owner?: { plan: Plan; createdAt: number; secretsVersion: number };
  /**
   * Set while an operator has suspended the app, or its owner's account (DECISIONS §15): nothing
   * of it runs or is served, its data is kept. Read with the app on every request, so a
   * suspension holds from the next request on, on every instance.
   */
  suspension: Suspension | null;
}

/** Why an app is stopped: its own suspension, or its owner's. */
export interface Suspension {
  of: "app" | "owner";
  at: number;
  /** The operator's words, for the owner and operators; callers see only that it is suspended. */
  reason: string;
}

type Db = Kysely<Database>;

/** Every app read selects these (joins: owner, storage usage, secrets version); `toRecord` reads them. */
export function selectApps(db: Db) {
  return db
    .selectFrom("apps")
    .leftJoin("users", "users.id", "apps.owner_user_id")
    .leftJoin("app_storage_usage", "app_storage_usage.app_id", "apps.id")
    .leftJoin("secret_versions", (join) =>
      join.onRef("secret_versions.owner_user_id", "=", "apps.owner_user_id").onRef("secret_versions.manifest_id", "=", "apps.manifest_id"),
    )
    .select([
      "apps.id",
      "apps.manifest_id",
      "apps.display_name",
      "apps.owner_user_id",
      "apps.claimed_at",
      "apps.expires_at",
      "apps.revision",
      "apps.manifest",
      "apps.icon_override",
      "apps.visibility",
      "apps.starter_prompt",
      "apps.remixable",
      "apps.copied_from",
      "apps.created_at",
      "apps.updated_at",
      "apps.suspended_at",
      "apps.suspended_reason",
      "users.suspended_at as owner_suspended_at",
      "users.suspended_reason as owner_suspended_reason",
      "users.handle",
      "users.plan as owner_plan",
      "users.created_at as owner_created_at",
      "secret_versions.version as secrets_version",
      "app_storage_usage.data_version",
      "app_storage_usage.bytes as stored_bytes",
    ]);
}

type AppRow = Awaited<ReturnType<ReturnType<typeof selectApps>["executeTakeFirstOrThrow"]>>;

export function toRecord(row: AppRow): AppRecord {
  const manifest = JSON.parse(row.manifest) as Manifest;
  const override = row.icon_override === null ? null : (JSON.parse(row.icon_override) as Icon);
  return {
    id: row.id,
    manifestId: row.manifest_id,
    displayName: row.display_name,
    ownerUserId: row.owner_user_id,
    ownerHandle: row.handle,
    claimedAt: row.claimed_at === null ? null : Number(row.claimed_at),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    revision: Number(row.revision),
    manifest,
    icon: override ?? manifest.icon,
    visibility: row.visibility,
    starterPrompt: row.starter_prompt,
    remixable: Number(row.remixable) === 1,
    copiedFrom: row.copied_from,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    dataVersion: Number(row.data_version ?? 0),
    storedBytes: Number(row.stored_bytes ?? 0),
    suspension: suspensionOf(row),
    ...(row.owner_plan === null || row.owner_created_at === null
      ? {}
      : { owner: { plan: row.owner_plan as Plan, createdAt: Number(row.owner_created_at), secretsVersion: Number(row.secrets_version ?? 0) } }),
  };
}

function suspensionOf(row: AppRow): Suspension | null {
  if (row.suspended_at !== null) return { of: "app", at: Number(row.suspended_at), reason: row.suspended_reason ?? "" };
  if (row.owner_suspended_at !== null) return { of: "owner", at: Number(row.owner_suspended_at), reason: row.owner_suspended_reason ?? "" };
  return null;
}

/** About what a record takes in memory: its manifest (parsed, ~3× its JSON) and the rest. */
export function recordBytes(app: AppRecord): number {
  return 3 * JSON.stringify(app.manifest).length + 2048;
}

/** The record of an app just inserted at revision 1, without reading it back. */
export function newAppRecord(input: {
  id: string;
  ownerUserId: string | null;
  ownerHandle: string | null;
  claimedAt: number | null;
  expiresAt: number | null;
  now: number;
  manifest: Manifest;
}): AppRecord {
  return {
    id: input.id,
    manifestId: input.manifest.id,
    displayName: input.manifest.displayName,
    ownerUserId: input.ownerUserId,
    ownerHandle: input.ownerHandle,
    claimedAt: input.claimedAt,
    expiresAt: input.expiresAt,
    revision: 1,
    manifest: input.manifest,
    icon: input.manifest.icon,
    visibility: "private",
    starterPrompt: null,
    remixable: false,
    copiedFrom: null,
    createdAt: input.now,
    updatedAt: input.now,
    dataVersion: 0,
    storedBytes: 0,
    suspension: null,
  };
}

// Read on every op call and page view.
const appById = new PreparedQuery(1, (db, id: string) => selectApps(db).where("apps.id", "=", id));

export async function findApp(db: Db, id: string): Promise<AppRecord | null> {
  const row = await appById.takeFirst(db, id);
  return row === undefined ? null : toRecord(row);
}

// An op call's one read: the app and the token epoch (migration 022) its bearer token is checked under.
const selectAppsWithTokenEpoch = (db: Db) => selectApps(db).select((eb) => eb.selectFrom("token_epoch").select("epoch").where("token_epoch.id", "=", 1).as("token_epoch"));
const appByIdWithTokenEpoch = new PreparedQuery(1, (db, id: string) => selectAppsWithTokenEpoch(db).where("apps.id", "=", id));
const tokenEpoch = new PreparedQuery(0, (db) => db.selectFrom("token_epoch").select("epoch").where("id", "=", 1));

/** An op call's one read: the app (with its owner's plan and secrets version) and the token epoch. */
export interface AppWithTokenEpoch {
  app: AppRecord | null;
  tokenEpoch: number;
}

/** The app (or null) and the token epoch, read in one query when the app exists. */
export async function findAppWithTokenEpoch(db: Db, id: string): Promise<AppWithTokenEpoch> {
  const row = await appByIdWithTokenEpoch.takeFirst(db, id);
  if (row !== undefined) return { app: toRecord(row), tokenEpoch: Number(row.token_epoch) };
  const epoch = await tokenEpoch.takeFirst(db);
  return { app: null, tokenEpoch: Number(epoch?.epoch ?? 0) };
}

// PostgreSQL: the op calls of one event-loop turn read their apps in one query (TurnBatch).
const appsByIdsWithTokenEpoch = new PreparedQuery(1, (db, ids: string[]) => selectAppsWithTokenEpoch(db).where(sql<boolean>`${sql.ref("apps.id")} = any(${ids}::text[])`));

/** `findAppWithTokenEpoch` for several ids at once (PostgreSQL); an id with no app maps to `app: null`. */
export async function findAppsWithTokenEpoch(db: Db, ids: string[]): Promise<Map<string, AppWithTokenEpoch>> {
  const rows = (await appsByIdsWithTokenEpoch.execute(db, ids)).rows;
  const found = new Map<string, AppWithTokenEpoch>(rows.map((row) => [row.id, { app: toRecord(row), tokenEpoch: Number(row.token_epoch) }]));
  if (found.size < ids.length) {
    const epoch = Number((await tokenEpoch.takeFirst(db))?.epoch ?? 0);
    for (const id of ids) if (!found.has(id)) found.set(id, { app: null, tokenEpoch: epoch });
  }
  return found;
}

export async function findOwnedByManifestId(db: Db, userId: string, manifestId: string): Promise<AppRecord | null> {
  const row = await selectApps(db).where("apps.owner_user_id", "=", userId).where("apps.manifest_id", "=", manifestId).executeTakeFirst();
  return row === undefined ? null : toRecord(row);
}

/**
 * A page of the apps a user owns, holds an accepted share of, or reaches as a member of the
 * team that owns them, newest first, with the share's and the membership's roles.
 *
 * Each relation is found through its own index first (owned and team apps by
 * `apps_owner_created`, newest first and cut at the page size; shares by `app_shares_grantee`)
 * and only those candidates are joined and sorted, so a page costs what the user's own apps
 * cost however many apps the service holds. (One OR across the joins reads every app.)
 */
export async function listedPage(
  db: Db,
  userId: string,
  limit: number,
  after: { createdAt: number; id: string } | null,
  search: string | null = null,
): Promise<{ app: AppRecord; shareRole: string | null; teamRole: string | null }[]> {
  const inWindow = (eb: ExpressionBuilder<Database, "apps">) => {
    const conditions: Expression<SqlBool>[] = [];
    if (after !== null) {
      conditions.push(eb.or([eb("apps.created_at", "<", after.createdAt), eb.and([eb("apps.created_at", "=", after.createdAt), eb("apps.id", "<", after.id)])]));
    }
    if (search !== null && search !== "") {
      // A substring of the name or manifest id, any case; LIKE's own wildcards in it match themselves.
      const pattern = `%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      conditions.push(eb.or([sql<boolean>`lower(apps.display_name) like ${pattern} escape '\\'`, sql<boolean>`lower(apps.manifest_id) like ${pattern} escape '\\'`]));
    }
    return eb.and(conditions);
  };
  const newest = <Q extends SelectQueryBuilder<Database, "apps", { id: string }>>(query: Q) =>
    query.where(inWindow).orderBy("apps.created_at", "desc").orderBy("apps.id", "desc").limit(limit);
  const owned = newest(db.selectFrom("apps").select("apps.id").where("apps.owner_user_id", "=", userId));
  const ofTeams = newest(
    db
      .selectFrom("apps")
      .select("apps.id")
      .where("apps.owner_user_id", "in", db.selectFrom("team_members").select("team_members.team_id").where("team_members.user_id", "=", userId)),
  );
  const shared = db.selectFrom("app_shares").select("app_shares.app_id as id").where("app_shares.grantee_user_id", "=", userId).where("app_shares.status", "=", "accepted");
  const candidates = db
    .selectFrom(owned.as("owned"))
    .select("owned.id")
    .unionAll(db.selectFrom(ofTeams.as("team_apps")).select("team_apps.id"))
    .unionAll(shared);
  const rows = await selectApps(db)
    .leftJoin("app_shares", (join) =>
      join.onRef("app_shares.app_id", "=", "apps.id").on("app_shares.grantee_user_id", "=", userId).on("app_shares.status", "=", "accepted"),
    )
    .leftJoin("team_members", (join) => join.onRef("team_members.team_id", "=", "apps.owner_user_id").on("team_members.user_id", "=", userId))
    .select(["app_shares.role as share_role", "team_members.role as team_role"])
    .where("apps.id", "in", candidates)
    .where(inWindow)
    .orderBy("apps.created_at", "desc")
    .orderBy("apps.id", "desc")
    .limit(limit)
    .execute();
  return rows.map((row) => ({ app: toRecord(row), shareRole: row.share_role, teamRole: row.team_role }));
}

/**
 * Apps where `userId` has `source:write` through a relation SQL can see (ownership, a team, a
 * collaborator share): the lists of routines and webhooks across apps (spec webhook rule 6).
 * It must agree with `Apps.roleOf`; the permission matrix test holds both to the same table.
 */
export function writableBy(eb: ExpressionBuilder<Database, "apps">, userId: string) {
  return eb.or([
    eb("apps.owner_user_id", "=", userId),
    eb("apps.owner_user_id", "in", eb.selectFrom("team_members").select("team_members.team_id").where("team_members.user_id", "=", userId)),
    eb(
      "apps.id",
      "in",
      eb
        .selectFrom("app_shares")
        .select("app_shares.app_id")
        .where("app_shares.grantee_user_id", "=", userId)
        .where("app_shares.status", "=", "accepted")
        .where("app_shares.role", "=", "collaborator"),
    ),
  ]);
}

// Every create and source write runs these: built and compiled once (PreparedQuery).
const insertAppRow = new PreparedQuery(
  10,
  (db, id: string, manifestId: string, displayName: string, owner: string | null, claimedAt: number | null, expiresAt: number | null, manifest: string, copiedFrom: string | null, createdAt: number, updatedAt: number) =>
    db.insertInto("apps").values({
      id,
      manifest_id: manifestId,
      display_name: displayName,
      owner_user_id: owner,
      claimed_at: claimedAt,
      expires_at: expiresAt,
      revision: 1,
      manifest,
      icon_override: null,
      copied_from: copiedFrom,
      created_at: createdAt,
      updated_at: updatedAt,
    }),
);
const insertVersionRow = new PreparedQuery(
  9,
  (db, appId: string, revision: number, module: string, ui: string | null, styles: string | null, manifest: string, sizeBytes: number, createdAt: number, buildDigest: string | null) =>
    db.insertInto("app_versions").values({ app_id: appId, revision, module, ui, styles, manifest, size_bytes: sizeBytes, created_at: createdAt, build_digest: buildDigest }),
);

export async function insertApp(
  db: Db,
  row: { id: string; ownerUserId: string | null; claimedAt: number | null; expiresAt: number | null; now: number; prepared: PreparedSource; copiedFrom?: string },
): Promise<void> {
  const manifest = JSON.stringify(row.prepared.manifest);
  const { id, displayName } = row.prepared.manifest;
  await insertAppRow.execute(db, row.id, id, displayName, row.ownerUserId, row.claimedAt, row.expiresAt, manifest, row.copiedFrom ?? null, row.now, row.now);
  await insertVersion(db, row.id, 1, row.now, row.prepared, manifest);
}

/**
 * Moves the app from `expected` to `expected + 1` and stores that revision's source. The
 * conditional UPDATE is the concurrency guard on both dialects: of any number of writers that
 * read the same revision, exactly one matches the row. Returns false when this one lost.
 * Run it inside a transaction so the version row and the bump land together.
 */
export async function commitRevision(db: Db, id: string, expected: number, now: number, prepared: PreparedSource): Promise<boolean> {
  const manifest = JSON.stringify(prepared.manifest);
  const result = await db
    .updateTable("apps")
    .set({ revision: expected + 1, manifest, display_name: prepared.manifest.displayName, updated_at: now })
    .where("id", "=", id)
    .where("revision", "=", expected)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  await insertVersion(db, id, expected + 1, now, prepared, manifest);
  return true;
}

/**
 * Advances the app by one revision whatever it is now (last write wins: PUT and upserts carry no
 * precondition) and stores the source under the new number. The UPDATE takes the row lock, so
 * concurrent writers get consecutive revisions. Returns the new revision, or null if the app is
 * gone. Run it inside a transaction.
 */
export async function bumpRevision(db: Db, id: string, now: number, prepared: PreparedSource): Promise<number | null> {
  const manifest = JSON.stringify(prepared.manifest);
  const row = await db
    .updateTable("apps")
    .set((eb) => ({ revision: eb("revision", "+", 1), manifest, display_name: prepared.manifest.displayName, updated_at: now }))
    .where("id", "=", id)
    .returning("revision")
    .executeTakeFirst();
  if (row === undefined) return null;
  const revision = Number(row.revision);
  await insertVersion(db, id, revision, now, prepared, manifest);
  return revision;
}

async function insertVersion(db: Db, appId: string, revision: number, now: number, prepared: PreparedSource, manifest: string): Promise<void> {
  // A module with npm imports runs only as its bundle; storing it without one would publish an
  // app that fails at its first call.
  if (prepared.imports.npm.length > 0 && prepared.build === undefined) throw new Error(`revision ${revision} of ${appId} imports npm packages but has no bundle`);
  const { module, ui, styles } = prepared.source;
  await insertVersionRow.execute(db, appId, revision, module, ui, styles, manifest, prepared.sizeBytes, now, prepared.build ?? null);
}

/** The source and manifest of one revision of an app, or null. */
export async function findVersion(db: Db, appId: string, revision: number) {
  const row = await db
    .selectFrom("app_versions")
    .select(["revision", "module", "ui", "styles", "manifest", "build_digest"])
    .where("app_id", "=", appId)
    .where("revision", "=", revision)
    .executeTakeFirst();
  if (row === undefined) return null;
  return {
    revision: Number(row.revision),
    module: row.module,
    ui: row.ui,
    styles: row.styles,
    manifest: JSON.parse(row.manifest) as Manifest,
    buildDigest: row.build_digest,
  };
}

/**
 * Removes the app and every row it owns: tokens and its secrets have no foreign key, the rest
 * cascade. Secrets belong to (owner, manifest id), the pair that names the app in its owner's
 * account: once it is gone nothing can list or delete them, and a later app of that owner under
 * that manifest id (another's code copied in, say) would read them as its own. Given
 * `unclaimedExpiredAt`, only an app still unclaimed and expired at that instant: the reaper's
 * choice, made before a claim may have committed. The app's row goes first, as a claim takes it
 * before the app's tokens: taken the other way round, a claim and the deletion of the same app
 * each held what the other wanted (a deadlock). PostgreSQL re-checks the condition on the row the
 * claim left, so a deletion that waited for a claim leaves the claimed app alone.
 */
export async function deleteAppRows(db: Db, id: string, unclaimedExpiredAt?: number): Promise<boolean> {
  let app = db.deleteFrom("apps").where("id", "=", id);
  if (unclaimedExpiredAt !== undefined) app = app.where("owner_user_id", "is", null).where("expires_at", "<=", unclaimedExpiredAt);
  const gone = await app.returning(["owner_user_id", "manifest_id"]).executeTakeFirst();
  if (gone === undefined) return false;
  await db.deleteFrom("tokens").where("app_id", "=", id).execute();
  if (gone.owner_user_id !== null) {
    const { owner_user_id: owner, manifest_id: manifestId } = gone;
    await db.deleteFrom("secrets").where("owner_user_id", "=", owner).where("manifest_id", "=", manifestId).execute();
    await db.deleteFrom("secret_versions").where("owner_user_id", "=", owner).where("manifest_id", "=", manifestId).execute();
  }
  return true;
}
