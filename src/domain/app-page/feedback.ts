import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { iso, type Clock } from "../../config/clock.ts";
import { apiError, recovery } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";

/** Spec Limits: feedback text 16 KiB, structuredData 64 KiB serialized (the wire cap is the route's). */
export const FEEDBACK_TEXT_MAX_BYTES = 16 * 1024;
export const FEEDBACK_DATA_MAX_BYTES = 64 * 1024;
export const FEEDBACK_WIRE_MAX_BYTES = 96 * 1024;
/** What an app keeps: the newest 200, all the owner's list shows; older ones go as new ones come. */
export const FEEDBACK_KEPT = 200;

export interface FeedbackInput {
  text: string;
  structuredData?: unknown;
  email?: string;
}

export interface FeedbackView {
  id: string;
  text: string;
  structuredData: unknown;
  email: string | null;
  revision: number;
  createdAt: string;
}

/** Feedback people send from an app's page (DECISIONS §6), read by the owner. */
export class Feedback {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async add(app: { id: string; revision: number }, userId: string | null, input: FeedbackInput): Promise<string> {
    const textBytes = Buffer.byteLength(input.text);
    if (textBytes > FEEDBACK_TEXT_MAX_BYTES) {
      throw apiError("text_too_large", `feedback text is at most ${FEEDBACK_TEXT_MAX_BYTES} bytes`, { recovery: recovery.shrink("text", textBytes, FEEDBACK_TEXT_MAX_BYTES) });
    }
    const data = input.structuredData === undefined ? null : JSON.stringify(input.structuredData);
    const dataBytes = data === null ? 0 : Buffer.byteLength(data);
    if (dataBytes > FEEDBACK_DATA_MAX_BYTES) {
      throw apiError("structured_data_too_large", `structuredData is at most ${FEEDBACK_DATA_MAX_BYTES} bytes serialized`, {
        recovery: recovery.shrink("structured_data", dataBytes, FEEDBACK_DATA_MAX_BYTES),
      });
    }
    const id = randomUUID();
    await this.db
      .insertInto("feedback")
      .values({ id, app_id: app.id, text: input.text, structured_data: data, email: input.email ?? null, user_id: userId, revision: app.revision, created_at: this.clock.now() })
      .execute();
    await this.trim(app.id);
    return id;
  }

  /**
   * Drops what is past the newest FEEDBACK_KEPT: anyone who can open a public app may send it
   * feedback, ~80 KiB a message, and it was all kept for ever where the owner saw only the newest.
   */
  private async trim(appId: string): Promise<void> {
    const oldestKept = await this.newestFirst(appId).select(["created_at", "id"]).offset(FEEDBACK_KEPT - 1).limit(1).executeTakeFirst();
    if (oldestKept === undefined) return;
    await this.db
      .deleteFrom("feedback")
      .where("app_id", "=", appId)
      .where((eb) => eb.or([eb("created_at", "<", oldestKept.created_at), eb.and([eb("created_at", "=", oldestKept.created_at), eb("id", ">", oldestKept.id)])]))
      .execute();
  }

  private newestFirst(appId: string) {
    return this.db.selectFrom("feedback").where("app_id", "=", appId).orderBy("created_at", "desc").orderBy("id");
  }

  /** Newest first: all that is kept. */
  async list(appId: string): Promise<FeedbackView[]> {
    const rows = await this.newestFirst(appId).selectAll().limit(FEEDBACK_KEPT).execute();
    return rows.map((r) => ({
      id: r.id,
      text: r.text,
      structuredData: r.structured_data === null ? null : (JSON.parse(r.structured_data) as unknown),
      email: r.email,
      revision: Number(r.revision),
      createdAt: iso(Number(r.created_at)),
    }));
  }
}
