export const TEMPLATE_CATEGORIES = ["business", "developer-tools", "education", "entertainment", "lifestyle", "productivity", "utilities"] as const;
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number];

/** An app's template listing: draft content, and whether (and at which revision) it is published. */
export interface TemplateListingsTable {
  app_id: string;
  title: string | null;
  summary: string | null;
  content_markdown: string | null;
  category: TemplateCategory | null;
  /** 1 while published: listed in /api/v1/templates and copyable by anyone signed in. */
  enabled: number;
  /** Copies of the template get this revision's code, not whatever the app runs later. */
  published_revision: number | null;
  published_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A cover or gallery image of a listing; the bytes are the app's asset `asset_key`. */
export interface TemplateMediaTable {
  id: string;
  app_id: string;
  kind: "cover" | "screenshot";
  asset_key: string;
  alt: string;
  caption: string | null;
  position: number;
  created_at: number;
}

/** Someone who copied the template (one row per person: the listing's `builders`). */
export interface TemplateBuildersTable {
  app_id: string;
  user_id: string;
  created_at: number;
}
