import type { Kysely } from "kysely";

/**
 * A person's render tokens of one form for one app, newest first: what a render rotates (the
 * previous frame tokens) and trims (those past the newest few, RenderTokens). Through
 * `tokens_app_id` that was every render token of the app, everyone's, on every render.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex("tokens_render_holder").on("tokens").columns(["app_id", "user_id", "kind", "name", "created_at"]).execute();
}
