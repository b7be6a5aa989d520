import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import type { Database } from "../../store/schema/index.ts";

export interface Mail {
  to: string;
  subject: string;
  /** Plain text; links in it are the reason most mail is sent. */
  text: string;
}

/**
 * Outgoing mail (ARCHITECTURE: email). Every message becomes an outbox row first, so nothing
 * sent is lost and an operator without SMTP can read the outbox (`brickyard` CLI or SQL). SMTP
 * delivery is not built yet: `SMTP_URL` is read but rows stay unsent (issue 15 note).
 */
export class Mailer {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async send(mail: Mail, db: Kysely<Database> = this.db): Promise<string> {
    const id = randomUUID();
    await db.insertInto("outbox").values({ id, to_address: mail.to, subject: mail.subject, body: mail.text, created_at: this.clock.now(), sent_at: null, error: null }).execute();
    return id;
  }

  /** The newest messages to an address, newest first (tests and the operator read mail here). */
  async to(address: string, limit = 10): Promise<Mail[]> {
    const rows = await this.db.selectFrom("outbox").select(["to_address", "subject", "body"]).where("to_address", "=", address.toLowerCase()).orderBy("created_at", "desc").limit(limit).execute();
    return rows.map((r) => ({ to: r.to_address, subject: r.subject, text: r.body }));
  }
}
