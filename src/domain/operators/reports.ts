import type { Kysely } from "kysely";
import { DAY, type Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { timeOrderedUuid, type Database } from "../../store/index.ts";

/** What a report says an app is (DECISIONS §15: a reason from a list). */
export const ABUSE_REASONS = {
  phishing: "Phishing or stealing passwords",
  malware: "Malware or harmful downloads",
  spam: "Spam or scams",
  illegal: "Illegal content",
  harassment: "Harassment or hate",
  other: "Something else",
} as const;
export type AbuseReason = keyof typeof ABUSE_REASONS;

export const DETAILS_MAX_BYTES = 2048;
/** Reports are read and acted on, not archived: a year, as the audit log. */
const KEEP_MS = 365 * DAY;

export interface AbuseReport {
  id: string;
  appId: string;
  reason: AbuseReason;
  details: string;
  reporterIp: string;
  createdAt: number;
}

/** Anyone's reports about an app, for operators (`/admin`). */
export class AbuseReports {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Checks and keeps one report; the route has found the app and taken from the address's bucket. */
  async submit(appId: string, input: { reason: unknown; details: unknown }, reporterIp: string): Promise<AbuseReport> {
    const reason = input.reason;
    if (typeof reason !== "string" || !Object.hasOwn(ABUSE_REASONS, reason)) throw apiError("invalid_request", `reason must be one of ${Object.keys(ABUSE_REASONS).join(", ")}`);
    const details = typeof input.details === "string" ? input.details.trim() : input.details === undefined ? "" : null;
    if (details === null || Buffer.byteLength(details) > DETAILS_MAX_BYTES) throw apiError("invalid_request", `details must be text of at most ${DETAILS_MAX_BYTES} bytes`);
    const report: AbuseReport = { id: timeOrderedUuid(this.clock.now()), appId, reason: reason as AbuseReason, details, reporterIp, createdAt: this.clock.now() };
    await this.db
      .insertInto("abuse_reports")
      .values({ id: report.id, app_id: appId, reason: report.reason, details, reporter_ip: reporterIp, created_at: report.createdAt })
      .execute();
    return report;
  }

  /** Newest first; of one app when `appId` is given. */
  async list(limit: number, appId?: string): Promise<AbuseReport[]> {
    let q = this.db.selectFrom("abuse_reports").selectAll();
    if (appId !== undefined) q = q.where("app_id", "=", appId);
    const rows = await q.orderBy("created_at", "desc").orderBy("id", "desc").limit(limit).execute();
    return rows.map((row) => ({ id: row.id, appId: row.app_id, reason: row.reason as AbuseReason, details: row.details, reporterIp: row.reporter_ip, createdAt: Number(row.created_at) }));
  }

  async sweep(): Promise<void> {
    await this.db.deleteFrom("abuse_reports").where("created_at", "<", this.clock.now() - KEEP_MS).execute();
  }
}
