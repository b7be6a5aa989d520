import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Transporter } from "nodemailer";
import type { Logger } from "pino";
import { DAY, type Clock } from "../../config/clock.ts";
import type { Database } from "../../store/schema/index.ts";

export interface Mail {
  to: string;
  subject: string;
  /** Plain text; links in it are the reason most mail is sent. */
  text: string;
}

/**
 * How long a message stays in the outbox. Its rows carry what was mailed (links that sign in or
 * verify, the text of feedback an owner quoted in a reply) and belong to no app or account that
 * would take them when it goes: past this they are swept. An operator without SMTP reads the
 * outbox for a message in its first days; every link in one has expired long before.
 */
export const OUTBOX_RETENTION_MS = 30 * DAY;

/**
 * Outgoing mail (ARCHITECTURE: email). Every message becomes an outbox row first, so nothing sent
 * is lost and an operator without SMTP can read the outbox. With `SMTP_URL` set, nodemailer sends
 * each row as soon as it is written and marks it sent, or records why not; the caller never
 * waits on the mail server. Rows go after OUTBOX_RETENTION_MS (`sweep`).
 */
export class Mailer {
  /** Made on start when `SMTP_URL` is set; nodemailer is imported only then (~60 ms of a start). */
  private readonly transport: Promise<Transporter> | null;
  private readonly from: string;
  private readonly sending = new Set<Promise<void>>();
  private readonly log: Logger | null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    options: { smtpUrl: string | null; baseUrl: string; log?: Logger },
  ) {
    const smtpUrl = options.smtpUrl;
    this.transport = smtpUrl === null ? null : import("nodemailer").then(({ createTransport }) => createTransport(smtpUrl));
    // A transport that cannot be made fails each delivery, recorded on its outbox row.
    this.transport?.catch(() => undefined);
    this.from = `Brickyard <no-reply@${new URL(options.baseUrl).hostname}>`;
    this.log = options.log ?? null;
  }

  async send(mail: Mail): Promise<string> {
    const id = randomUUID();
    await this.db.insertInto("outbox").values({ id, to_address: mail.to, subject: mail.subject, body: mail.text, created_at: this.clock.now(), sent_at: null, error: null }).execute();
    if (this.transport !== null) {
      const delivery = this.deliver(this.transport, id, mail).finally(() => this.sending.delete(delivery));
      this.sending.add(delivery);
    }
    return id;
  }

  /** Retention sweep for the scheduler: messages written more than OUTBOX_RETENTION_MS ago. */
  async sweep(): Promise<number> {
    const result = await this.db.deleteFrom("outbox").where("created_at", "<", this.clock.now() - OUTBOX_RETENTION_MS).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** The newest messages to an address, newest first (tests and the operator read mail here). */
  async to(address: string, limit = 10): Promise<(Mail & { sentAt: number | null; error: string | null })[]> {
    const rows = await this.db
      .selectFrom("outbox")
      .select(["to_address", "subject", "body", "sent_at", "error"])
      .where("to_address", "=", address.toLowerCase())
      .orderBy("created_at", "desc")
      .limit(limit)
      .execute();
    return rows.map((r) => ({ to: r.to_address, subject: r.subject, text: r.body, sentAt: r.sent_at, error: r.error }));
  }

  /** Waits for the deliveries under way (shutdown, tests). */
  async settled(): Promise<void> {
    await Promise.all([...this.sending]);
  }

  close(): void {
    void this.transport?.then((transport) => transport.close(), () => undefined);
  }

  private async deliver(transport: Promise<Transporter>, id: string, mail: Mail): Promise<void> {
    try {
      await (await transport).sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text });
      await this.db.updateTable("outbox").set({ sent_at: this.clock.now(), error: null }).where("id", "=", id).execute();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      // The message stays in the outbox, unsent, with the reason; it never carries the body to the log.
      this.log?.warn({ outboxId: id, reason }, "mail not sent");
      await this.db.updateTable("outbox").set({ error: reason.slice(0, 500) }).where("id", "=", id).execute().catch(() => undefined);
    }
  }
}
