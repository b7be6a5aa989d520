import type { Kysely } from "kysely";
import { apiError, recovery } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import type { AppRecord } from "../apps/queries.ts";
import type { Mailer } from "../mail/mailer.ts";
import { FEEDBACK_TEXT_MAX_BYTES } from "./feedback.ts";

/**
 * An owner's reply to feedback (issue 19), sent by mail: to the address the sender left, or the
 * signed-in sender's own. The recipient's address is never shown to the owner by this: the reply
 * goes through the outbox. Feedback with neither has no one to reply to (409).
 */
export class FeedbackReplies {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly mailer: Mailer,
  ) {}

  async reply(app: AppRecord, feedbackId: string, text: string, ownerHandle: string): Promise<void> {
    const bytes = Buffer.byteLength(text);
    if (text.trim() === "") throw apiError("invalid_request", "the reply is empty");
    if (bytes > FEEDBACK_TEXT_MAX_BYTES) {
      throw apiError("text_too_large", `a reply is at most ${FEEDBACK_TEXT_MAX_BYTES} bytes`, { recovery: recovery.shrink("text", bytes, FEEDBACK_TEXT_MAX_BYTES) });
    }
    const row = await this.db
      .selectFrom("feedback")
      .leftJoin("users", "users.id", "feedback.user_id")
      .select(["feedback.email", "feedback.text", "users.email as user_email"])
      .where("feedback.id", "=", feedbackId)
      .where("feedback.app_id", "=", app.id)
      .executeTakeFirst();
    if (row === undefined) throw apiError("feedback_not_found", `no feedback ${feedbackId} on this app`);
    const to = row.email ?? row.user_email;
    if (to === null || to === undefined) throw apiError("feedback_has_no_reply_recipient", "this feedback left no address and was sent by nobody signed in; there is no one to reply to");
    const quoted = row.text.split("\n").map((line) => `> ${line}`).join("\n");
    await this.mailer.send({
      to,
      subject: `Re: your feedback on ${app.displayName}`,
      text: `@${ownerHandle}, who runs ${app.displayName}, replied to your feedback:\n\n${text}\n\nYou wrote:\n${quoted}\n`,
    });
  }
}
