import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { BlobStore } from "../../blobs/blob-store.ts";
import { BlobReadCache } from "../../blobs/read-cache.ts";
import { DAY, iso, type Clock } from "../../config/clock.ts";
import { apiError, recovery } from "../../errors/index.ts";
import type { Database, Dialect } from "../../store/index.ts";
import { lockRow } from "../../store/row-lock.ts";
import { keyStartsWith } from "../../runtime/index.ts";

/** Spec Limits: 10 MiB an asset, 50 assets and 100 MiB per app. */
export const ASSET_MAX_BYTES = 10 * 1024 * 1024;
export const ASSETS_PER_APP = 50;
export const ASSET_QUOTA_BYTES = 100 * 1024 * 1024;
export const SIGNED_URL_TTL_MS = DAY;

// DECISIONS §7.
const KEY = /^[a-zA-Z0-9][a-zA-Z0-9._/-]{0,199}$/;
const MEDIA = /^(image|font|audio|video)\/[a-z0-9][a-z0-9.+-]*$/;
const TEXT = /^text\/[a-z0-9][a-z0-9.+-]*$/;
const OTHER = new Set(["application/json", "application/pdf", "application/octet-stream"]);

export interface AssetView {
  key: string;
  contentType: string;
  sizeBytes: number;
  url: string;
  createdAt: string;
  updatedAt: string;
}

export interface StoredAsset {
  contentType: string;
  data: Buffer;
}

export function checkAssetKey(key: string): string {
  if (!KEY.test(key) || key.includes("..")) {
    throw apiError("asset_invalid_key", "asset keys are 1-200 characters of letters, digits, . _ / -, start with a letter or digit, and never contain ..");
  }
  return key;
}

/** Where a template listing keeps its cover and screenshots (templates/media.ts), among the app's assets. */
export const TEMPLATE_MEDIA_PREFIX = "template-media/";

/**
 * The assets that are the app's own, not its template listing's: a copy takes only these (the
 * listing stays with the source, and its keys are out of the copy's owner's reach).
 */
export const ownAssets = sql<boolean>`not (${keyStartsWith(TEMPLATE_MEDIA_PREFIX)})`;

/**
 * A key the asset routes may write or delete: any valid key but the template listing's, which
 * change only through the listing (`app:template-edit`, and images only).
 */
export function checkUploadKey(key: string): string {
  if (checkAssetKey(key).startsWith(TEMPLATE_MEDIA_PREFIX)) {
    throw apiError("asset_invalid_key", `keys under ${TEMPLATE_MEDIA_PREFIX} are the template listing's cover and screenshots; change them through the listing`);
  }
  return key;
}

/** The stored form of an allowed content type (lower case, no parameters); 400 otherwise. */
export function checkContentType(raw: string): string {
  const type = (raw.split(";")[0] ?? "").trim().toLowerCase();
  // HTML (and XHTML) would run as a page on this origin; everything else is inert with nosniff.
  if (type === "text/html" || type === "application/xhtml+xml" || !(MEDIA.test(type) || TEXT.test(type) || OTHER.has(type))) {
    throw apiError("asset_invalid_content_type", `content type ${JSON.stringify(raw)} is not allowed; use images, fonts, audio, video, text (not HTML), JSON, PDF or octet-stream`);
  }
  return type;
}

/**
 * Uploaded assets (spec `POST /app/{id}/assets`; DECISIONS §7): metadata rows in the store,
 * bytes in the blob store, reachable through HMAC-signed URLs that last 24 hours.
 */
/** An asset's bytes already written for a copy, waiting for its row. */
export interface StagedAsset {
  key: string;
  blobKey: string;
  contentType: string;
  sizeBytes: number;
}

export class Assets {
  /** Asset bytes live under write-once keys (a fresh one per upload), so reads may be cached. */
  private readonly reads: BlobReadCache;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly signingKey: Buffer,
    private readonly baseUrl: () => string,
  ) {
    this.reads = new BlobReadCache(blobs);
  }

  async put(appId: string, key: string, contentType: string, data: Buffer): Promise<AssetView> {
    checkAssetKey(key);
    const type = checkContentType(contentType);
    if (data.length > ASSET_MAX_BYTES) assetTooLarge(data.length);
    // A fresh blob name per upload: the row flips to it in one transaction, then the old bytes go.
    const blobKey = `assets/${appId}/${randomBytes(12).toString("hex")}`;
    await this.blobs.put(blobKey, data);
    let replaced: string | null;
    try {
      replaced = await this.db.transaction().execute(async (trx) => {
        // Serializes uploads of one app so two cannot pass the caps together (PostgreSQL).
        if (!(await lockRow(trx, this.dialect, "apps", appId))) throw apiError("app_not_found", "this app was deleted while the asset was uploaded");
        const totals = await trx
          .selectFrom("assets")
          .select([sql<number>`count(*)`.as("count"), sql<number>`coalesce(sum(size_bytes), 0)`.as("bytes")])
          .where("app_id", "=", appId)
          .executeTakeFirstOrThrow();
        const old = await trx.selectFrom("assets").select(["blob_key", "size_bytes"]).where("app_id", "=", appId).where("key", "=", key).executeTakeFirst();
        if (old === undefined && Number(totals.count) >= ASSETS_PER_APP) {
          throw apiError("asset_count_exceeded", `an app holds at most ${ASSETS_PER_APP} assets; delete one first`, {
            recovery: recovery.shrink("asset", data.length, 0),
          });
        }
        const after = Number(totals.bytes) - Number(old?.size_bytes ?? 0) + data.length;
        if (after > ASSET_QUOTA_BYTES) {
          throw apiError("asset_quota_exceeded", `assets of an app total at most ${ASSET_QUOTA_BYTES} bytes; this upload would make ${after}`, {
            recovery: recovery.shrink("asset", data.length, Math.max(0, ASSET_QUOTA_BYTES - (after - data.length))),
          });
        }
        const now = this.clock.now();
        await trx
          .insertInto("assets")
          .values({ app_id: appId, key, blob_key: blobKey, content_type: type, size_bytes: data.length, created_at: now, updated_at: now })
          .onConflict((oc) => oc.columns(["app_id", "key"]).doUpdateSet({ blob_key: blobKey, content_type: type, size_bytes: data.length, updated_at: now }))
          .execute();
        return old?.blob_key ?? null;
      });
    } catch (error) {
      await this.blobs.delete(blobKey);
      throw error;
    }
    if (replaced !== null) {
      await this.blobs.delete(replaced);
      this.reads.forget(replaced);
    }
    const view = await this.find(appId, key);
    if (view === null) throw new Error(`asset ${key} of ${appId} vanished after its upload`);
    return view;
  }

  async list(appId: string): Promise<AssetView[]> {
    const rows = await this.db.selectFrom("assets").selectAll().where("app_id", "=", appId).orderBy("key").execute();
    return rows.map((r) => this.view(r));
  }

  async find(appId: string, key: string): Promise<AssetView | null> {
    const row = await this.db.selectFrom("assets").selectAll().where("app_id", "=", appId).where("key", "=", key).executeTakeFirst();
    return row === undefined ? null : this.view(row);
  }

  async read(appId: string, key: string): Promise<StoredAsset | null> {
    const row = await this.db.selectFrom("assets").select(["blob_key", "content_type"]).where("app_id", "=", appId).where("key", "=", key).executeTakeFirst();
    if (row === undefined) return null;
    const data = await this.reads.get(row.blob_key);
    return data === null ? null : { contentType: row.content_type, data };
  }

  /** Removes one asset; false when there was none. */
  async delete(appId: string, key: string): Promise<boolean> {
    const row = await this.db.deleteFrom("assets").where("app_id", "=", appId).where("key", "=", key).returning("blob_key").executeTakeFirst();
    if (row === undefined) return false;
    await this.blobs.delete(row.blob_key);
    this.reads.forget(row.blob_key);
    return true;
  }

  /**
   * A copy's assets, first half: every own asset's bytes of `from` written again under fresh names
   * for `to`, before the copy's transaction; `insertCopies` adds the rows inside it, and
   * `discard` removes the bytes if that transaction does not commit.
   */
  async stageCopies(from: string, to: string): Promise<StagedAsset[]> {
    const rows = await this.db.selectFrom("assets").selectAll().where("app_id", "=", from).where(ownAssets).execute();
    const staged: StagedAsset[] = [];
    try {
      for (const row of rows) {
        const data = await this.blobs.get(row.blob_key);
        if (data === null) continue;
        const blobKey = `assets/${to}/${randomBytes(12).toString("hex")}`;
        await this.blobs.put(blobKey, data);
        staged.push({ key: row.key, blobKey, contentType: row.content_type, sizeBytes: Number(row.size_bytes) });
      }
    } catch (error) {
      await this.discard(staged);
      throw error;
    }
    return staged;
  }

  async insertCopies(trx: Kysely<Database>, to: string, staged: readonly StagedAsset[], now: number): Promise<void> {
    for (const a of staged) {
      await trx
        .insertInto("assets")
        .values({ app_id: to, key: a.key, blob_key: a.blobKey, content_type: a.contentType, size_bytes: a.sizeBytes, created_at: now, updated_at: now })
        .execute();
    }
  }

  async discard(staged: readonly StagedAsset[]): Promise<void> {
    for (const a of staged) await this.blobs.delete(a.blobKey);
  }

  /** App deletion: the rows cascade with the app; the bytes go here. */
  async dropApp(appId: string): Promise<void> {
    await this.blobs.deletePrefix(`assets/${appId}`);
  }

  close(): void {
    this.blobs.close();
  }

  /** `/app/{id}/assets/{key}?exp=…&sig=…`, valid for 24 hours. */
  signedUrl(appId: string, key: string): string {
    const exp = Math.floor((this.clock.now() + SIGNED_URL_TTL_MS) / 1000);
    return `${this.baseUrl()}/app/${appId}/assets/${encodeKey(key)}?exp=${exp}&sig=${this.sign(appId, key, exp)}`;
  }

  verify(appId: string, key: string, exp: string | undefined, sig: string | undefined): boolean {
    if (exp === undefined || sig === undefined || !/^\d{1,12}$/.test(exp)) return false;
    if (Number(exp) * 1000 <= this.clock.now()) return false;
    const expected = Buffer.from(this.sign(appId, key, Number(exp)));
    const given = Buffer.from(sig);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private sign(appId: string, key: string, exp: number): string {
    return createHmac("sha256", this.signingKey).update(`asset\n${appId}\n${key}\n${exp}`).digest("base64url");
  }

  private view(row: { app_id: string; key: string; content_type: string; size_bytes: number; created_at: number; updated_at: number }): AssetView {
    return {
      key: row.key,
      contentType: row.content_type,
      sizeBytes: Number(row.size_bytes),
      url: this.signedUrl(row.app_id, row.key),
      createdAt: iso(Number(row.created_at)),
      updatedAt: iso(Number(row.updated_at)),
    };
  }
}

/** 413 `asset_too_large`; the upload route also calls it when the stream passes the cap. */
export function assetTooLarge(size: number): never {
  throw apiError("asset_too_large", `an asset is at most ${ASSET_MAX_BYTES} bytes`, { recovery: recovery.shrink("asset", size, ASSET_MAX_BYTES) });
}

/** Keys may hold `/`; each segment is URL-encoded on its own. */
export function encodeKey(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}
