import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import type { Database, Dialect } from "../../store/index.ts";
import { lockRow } from "../../store/row-lock.ts";
import { TEMPLATE_CATEGORIES, type TemplateCategory, type TemplateListingsTable, type TemplateMediaTable } from "../../store/schema/templates.ts";
import { can, type Actor } from "../access/access.ts";
import type { Apps } from "../apps/apps.ts";
import type { AppRecord } from "../apps/queries.ts";
import type { Assets } from "../app-page/assets.ts";
import { checkImage, mediaAssetKey } from "./media.ts";

export { TEMPLATE_CATEGORIES, type TemplateCategory };

/** Content fields a PATCH may set (spec: supplied fields only). */
export interface ListingPatch {
  title?: string | null;
  summary?: string | null;
  contentMarkdown?: string | null;
  category?: TemplateCategory | null;
}

export interface MediaItem {
  id: string;
  kind: "cover" | "screenshot";
  assetKey: string;
  url: string;
  alt: string;
  caption: string | null;
  position: number;
}

interface Content {
  title: string | null;
  summary: string | null;
  contentMarkdown: string | null;
  category: TemplateCategory | null;
  cover: MediaItem | null;
  gallery: MediaItem[];
}

/** The spec's Template listing resource. */
export interface Listing {
  appId: string;
  creator: { handle: string; builders: number };
  draft: Content;
  legacyFallback: boolean;
  resolved: Content;
  templateEnabled: boolean;
  listed: boolean;
  validation: { complete: boolean; missingFields: string[] };
  publicUrl: string | null;
  publishedRevision: number | null;
}

/** What publishing needs set in the draft (DECISIONS §9). */
const REQUIRED = ["title", "summary", "category", "cover"] as const;
const GALLERY_MAX = 8;

/** Refuses a screenshot past the gallery's cap (a cover replaces the one there). */
function galleryRoom(kind: "cover" | "screenshot", media: readonly { kind: string }[]): void {
  if (kind === "screenshot" && media.filter((m) => m.kind === "screenshot").length >= GALLERY_MAX) {
    throw apiError("template_media_invalid", `a gallery holds at most ${GALLERY_MAX} screenshots; delete one first`);
  }
}

/**
 * Template listings (spec: Template listing; States → Template; DECISIONS §9). The owner's rights
 * (`app:template-edit`: the owner, a team app's admins) edit the draft, add media, publish and
 * disable; a PATCH changes only the fields it carries and never publishes. Publishing pins the
 * app's current revision: people who copy the template get that code, whatever the app runs
 * later. Media are images kept as assets of the app.
 */
export class Templates {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly assets: Assets,
    private readonly baseUrl: () => string,
  ) {}

  async get(appId: string, actor: Actor): Promise<Listing> {
    const app = await this.editable(appId, actor);
    return this.view(app, await this.row(app.id));
  }

  async patch(appId: string, actor: Actor, patch: ListingPatch): Promise<Listing> {
    const app = await this.editable(appId, actor);
    await this.ensureRow(app.id);
    const set: Partial<TemplateListingsTable> = {};
    if (patch.title !== undefined) set.title = blankToNull(patch.title);
    if (patch.summary !== undefined) set.summary = blankToNull(patch.summary);
    if (patch.contentMarkdown !== undefined) set.content_markdown = blankToNull(patch.contentMarkdown);
    if (patch.category !== undefined) set.category = patch.category;
    if (Object.keys(set).length > 0) await this.db.updateTable("template_listings").set({ ...set, updated_at: this.clock.now() }).where("app_id", "=", app.id).execute();
    return this.view(app, await this.row(app.id));
  }

  /** Publishes at the app's current revision: 422 `template_listing_incomplete` naming what is missing. */
  async publish(appId: string, actor: Actor): Promise<Listing> {
    const app = await this.editable(appId, actor);
    const listing = await this.view(app, await this.row(app.id));
    if (!listing.validation.complete) {
      throw apiError("template_listing_incomplete", `set ${listing.validation.missingFields.join(", ")} before publishing`, {
        details: { missingFields: listing.validation.missingFields },
      });
    }
    const now = this.clock.now();
    await this.db.updateTable("template_listings").set({ enabled: 1, published_revision: app.revision, published_at: now, updated_at: now }).where("app_id", "=", app.id).execute();
    return this.view(app, await this.row(app.id));
  }

  /** Copying off and unlisted; the draft stays (spec: States → Template). */
  async disable(appId: string, actor: Actor): Promise<Listing> {
    const app = await this.editable(appId, actor);
    await this.ensureRow(app.id);
    await this.db.updateTable("template_listings").set({ enabled: 0, updated_at: this.clock.now() }).where("app_id", "=", app.id).execute();
    return this.view(app, await this.row(app.id));
  }

  /** A cover (replacing any) or a gallery screenshot; images only (`template_media_invalid`). */
  async addMedia(appId: string, actor: Actor, input: { kind: string; alt: string; caption: string | null; contentType: string; data: Buffer }): Promise<MediaItem> {
    const app = await this.editable(appId, actor);
    if (input.kind !== "cover" && input.kind !== "screenshot") throw apiError("template_media_invalid", "kind must be cover or screenshot");
    if (input.alt.trim().length === 0 || input.alt.length > 300) throw apiError("template_media_invalid", "alt text is required (at most 300 characters): it is what people who cannot see the image read");
    const type = checkImage(input.contentType, input.data);
    const kind = input.kind;
    await this.ensureRow(app.id);
    // Refused before the image is stored; checked again under the lock below.
    galleryRoom(kind, await this.db.selectFrom("template_media").selectAll().where("app_id", "=", app.id).execute());
    const id = randomUUID();
    const assetKey = mediaAssetKey(id, type);
    await this.assets.put(app.id, assetKey, type, input.data);
    let written: { replaced: { asset_key: string }[]; position: number };
    try {
      written = await this.db.transaction().execute(async (trx) => {
        // One app's uploads one at a time, on every instance: one cover, and the gallery's cap.
        await lockRow(trx, this.dialect, "apps", app.id);
        const existing = await trx.selectFrom("template_media").selectAll().where("app_id", "=", app.id).execute();
        galleryRoom(kind, existing);
        const replaced = kind === "cover" ? existing.filter((m) => m.kind === "cover") : [];
        const position = kind === "cover" ? 0 : Math.max(0, ...existing.filter((m) => m.kind === "screenshot").map((m) => m.position + 1));
        for (const old of replaced) await trx.deleteFrom("template_media").where("id", "=", old.id).execute();
        await trx
          .insertInto("template_media")
          .values({ id, app_id: app.id, kind, asset_key: assetKey, alt: input.alt.trim(), caption: input.caption, position, created_at: this.clock.now() })
          .execute();
        return { replaced, position };
      });
    } catch (error) {
      await this.assets.delete(app.id, assetKey).catch(() => undefined);
      throw error;
    }
    const { replaced, position } = written;
    for (const old of replaced) await this.assets.delete(app.id, old.asset_key);
    return this.media({ id, app_id: app.id, kind: input.kind, asset_key: assetKey, alt: input.alt.trim(), caption: input.caption, position, created_at: 0 });
  }

  async deleteMedia(appId: string, actor: Actor, mediaId: string): Promise<boolean> {
    const app = await this.editable(appId, actor);
    const row = await this.db.deleteFrom("template_media").where("app_id", "=", app.id).where("id", "=", mediaId).returning("asset_key").executeTakeFirst();
    if (row === undefined) return false;
    await this.assets.delete(app.id, row.asset_key);
    return true;
  }

  /** Published templates of claimed apps that no operator has suspended (nor their owner), newest first (public). */
  async published(limit: number): Promise<Listing[]> {
    const rows = await this.db
      .selectFrom("template_listings")
      .innerJoin("apps", "apps.id", "template_listings.app_id")
      .innerJoin("users", "users.id", "apps.owner_user_id")
      .selectAll("template_listings")
      .where("template_listings.enabled", "=", 1)
      .where("apps.suspended_at", "is", null)
      .where("users.suspended_at", "is", null)
      .orderBy("template_listings.published_at", "desc")
      .limit(limit)
      .execute();
    const out: Listing[] = [];
    for (const row of rows) {
      const app = await this.apps.get(row.app_id);
      if (app !== null && app.ownerUserId !== null && app.suspension === null) out.push(await this.view(app, row));
    }
    return out;
  }

  /** The listing of a published template, or null (the public page and copies read this). */
  async publishedListing(appId: string): Promise<Listing | null> {
    const app = await this.apps.get(appId);
    if (app === null || app.ownerUserId === null) return null;
    const row = await this.row(app.id);
    return row?.enabled === 1 ? this.view(app, row) : null;
  }

  /** Someone built from the template (a copy under copyKind `template`): counted once per person. */
  async recordBuilder(appId: string, userId: string, db: Kysely<Database> = this.db): Promise<void> {
    await db.insertInto("template_builders").values({ app_id: appId, user_id: userId, created_at: this.clock.now() }).onConflict((oc) => oc.columns(["app_id", "user_id"]).doNothing()).execute();
  }

  /** `app:template-edit`: 403 `forbidden` without any relation (rule 4), `forbidden_template_edit` without the owner's rights. */
  private async editable(appId: string, actor: Actor): Promise<AppRecord> {
    const app = await this.apps.find(appId);
    const role = await this.apps.roleOf(actor, app);
    if (role === null) throw apiError("forbidden", "you have no access to this app");
    if (app.ownerUserId === null) throw apiError("forbidden", "this app is unclaimed; claim it under an account to publish it as a template");
    if (!can(role, "manage") || actor?.kind !== "user") throw apiError("forbidden_template_edit", `your role on this app (${role}) does not allow editing its template listing`);
    return app;
  }

  private row(appId: string) {
    return this.db.selectFrom("template_listings").selectAll().where("app_id", "=", appId).executeTakeFirst();
  }

  private async ensureRow(appId: string): Promise<void> {
    const now = this.clock.now();
    await this.db
      .insertInto("template_listings")
      .values({ app_id: appId, title: null, summary: null, content_markdown: null, category: null, enabled: 0, published_revision: null, published_at: null, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column("app_id").doNothing())
      .execute();
  }

  private async view(app: AppRecord, row: TemplateListingsTable | undefined): Promise<Listing> {
    const media = (await this.db.selectFrom("template_media").selectAll().where("app_id", "=", app.id).orderBy("position").execute()).map((m) => this.media(m));
    const builders = await this.db.selectFrom("template_builders").select((eb) => eb.fn.countAll<number>().as("n")).where("app_id", "=", app.id).executeTakeFirstOrThrow();
    const draft: Content = {
      title: row?.title ?? null,
      summary: row?.summary ?? null,
      contentMarkdown: row?.content_markdown ?? null,
      category: row?.category ?? null,
      cover: media.find((m) => m.kind === "cover") ?? null,
      gallery: media.filter((m) => m.kind === "screenshot"),
    };
    // Shown in place of what the draft leaves empty: the app's own name and description.
    const resolved: Content = { ...draft, title: draft.title ?? app.displayName, summary: draft.summary ?? app.manifest.description };
    const missingFields = REQUIRED.filter((f) => draft[f] === null);
    const enabled = row?.enabled === 1;
    return {
      appId: app.id,
      creator: { handle: app.ownerHandle ?? "", builders: Number(builders.n) },
      draft,
      legacyFallback: resolved.title !== draft.title || resolved.summary !== draft.summary,
      resolved,
      templateEnabled: enabled,
      listed: enabled,
      validation: { complete: missingFields.length === 0, missingFields: [...missingFields] },
      publicUrl: enabled ? `${this.baseUrl()}/templates/${app.id}` : null,
      publishedRevision: enabled ? (row?.published_revision ?? null) : null,
    };
  }

  private media(m: Pick<TemplateMediaTable, "id" | "app_id" | "kind" | "asset_key" | "alt" | "caption" | "position"> & { created_at: number }): MediaItem {
    return { id: m.id, kind: m.kind, assetKey: m.asset_key, url: this.assets.signedUrl(m.app_id, m.asset_key), alt: m.alt, caption: m.caption, position: Number(m.position) };
  }
}

function blankToNull(value: string | null): string | null {
  return value === null || value.trim().length === 0 ? null : value.trim();
}
