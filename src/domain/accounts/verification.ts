import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import { DAY, HOUR, type Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import type { Database } from "../../store/schema/index.ts";
import type { Mailer } from "../mail/mailer.ts";
import { randomBase62 } from "../tokens/format.ts";
import type { User } from "./users.ts";

/** DECISIONS §1: a verification link lives 48 hours and works once. */
export const VERIFICATION_TTL_MS = 48 * HOUR;

/**
 * Email ownership. Sign-up mails a link; following it marks the account's address verified and
 * hands the account what was sent to that address before (share invitations by email). Nothing
 * addressed to an email reaches an account that has not proved it receives mail there: anyone
 * can type someone else's address into a sign-up form.
 */
export class EmailVerification {
  /** Called with (userId, email) once an address is verified; shares take their invitations here. */
  private readonly onVerified: ((userId: string, email: string, db: Kysely<Database>) => Promise<void>)[] = [];

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly mailer: Mailer,
    private readonly baseUrl: () => string,
  ) {}

  /** Deletes verification links a day past their 48 hours, used or not: a row per resend otherwise stayed for ever. */
  async sweep(): Promise<number> {
    const result = await this.db.deleteFrom("email_verifications").where("expires_at", "<", this.clock.now() - DAY).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  whenVerified(hook: (userId: string, email: string, db: Kysely<Database>) => Promise<void>): void {
    this.onVerified.push(hook);
  }

  /** Mails a fresh link to the account's address. */
  async start(user: Pick<User, "id" | "email">): Promise<void> {
    const token = randomBase62(43);
    const now = this.clock.now();
    await this.db
      .insertInto("email_verifications")
      .values({ token_hash: hash(token), user_id: user.id, email: user.email, created_at: now, expires_at: now + VERIFICATION_TTL_MS, used_at: null })
      .execute();
    const link = `${this.baseUrl()}/verify-email?token=${token}`;
    await this.mailer.send({
      to: user.email,
      subject: "Confirm your email address for Brickyard",
      text: `Follow this link within 48 hours to confirm that this address is yours:\n\n${link}\n\nIf you did not sign up, ignore this message.`,
    });
  }

  /** Follows a link: the account's address is verified (once; 48 h; only while it still has that address). */
  async verify(token: string): Promise<{ userId: string; email: string }> {
    const now = this.clock.now();
    return this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom("email_verifications").selectAll().where("token_hash", "=", hash(token)).executeTakeFirst();
      if (row === undefined || row.used_at !== null) throw apiError("not_found", "this link is not valid or was used already; ask for a new one");
      if (row.expires_at <= now) throw apiError("token_expired", "this link has expired; ask for a new one");
      const user = await trx.selectFrom("users").select(["id", "email"]).where("id", "=", row.user_id).executeTakeFirst();
      if (user === undefined || user.email !== row.email) throw apiError("not_found", "this link was sent to an address the account no longer has");
      await trx.updateTable("email_verifications").set({ used_at: now }).where("token_hash", "=", row.token_hash).execute();
      await trx.updateTable("users").set({ email_verified_at: now }).where("id", "=", user.id).execute();
      for (const hook of this.onVerified) await hook(user.id, user.email, trx);
      return { userId: user.id, email: user.email };
    });
  }
}

function hash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
