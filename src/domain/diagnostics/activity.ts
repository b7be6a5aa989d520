import { randomUUID } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { DAY, iso, type Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { appGone, type Database } from "../../store/index.ts";

export const ACTIVITY_KINDS = ["api_proxy_result", "diag_report", "contract_validation"] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

/** DECISIONS §6: 1,000 events per app per kind per UTC day are kept; the rest are counted. */
export const ACTIVITY_DAILY_CAP = 1000;
export const ACTIVITY_RETENTION_MS = 90 * DAY;
export const ACTIVITY_LIMIT_DEFAULT = 100;
export const ACTIVITY_LIMIT_MAX = 500;

export interface ActivityEvent {
  ts: string;
  kind: ActivityKind;
  revision: number;
  summary: string;
  data: Record<string, unknown>;
}

export interface ActivityQuery {
  kinds: ActivityKind[] | null;
  since: number | null;
  limit: number;
}

const SUMMARY_CAP = 200;
const STRING_CAP = 500;

/** Durable runtime-failure events with per-kind daily caps and 90-day retention. */
export class Activity {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Records an event unless today's cap for (app, kind) is spent; returns whether it was kept. */
  async record(appId: string, kind: ActivityKind, revision: number, summary: string, data: Record<string, unknown>): Promise<boolean> {
    const now = this.clock.now();
    const day = Math.floor(now / DAY);
    return this.db.transaction().execute(async (trx) => {
      const counted = await trx
        .insertInto("activity_counts")
        .values({ app_id: appId, kind, day, count: 1 })
        .onConflict((oc) => oc.columns(["app_id", "kind", "day"]).doUpdateSet({ count: sql<number>`activity_counts.count + 1` }))
        .returning("count")
        .executeTakeFirstOrThrow();
      if (Number(counted.count) > ACTIVITY_DAILY_CAP) return false;
      await trx
        .insertInto("activity_events")
        .values({ id: randomUUID(), app_id: appId, ts: now, kind, revision, summary: redact(summary).slice(0, SUMMARY_CAP), data: JSON.stringify(redactData(data)) })
        .execute();
      return true;
    });
  }

  /** Newest first. */
  async list(appId: string, query: ActivityQuery): Promise<ActivityEvent[]> {
    let q = this.db.selectFrom("activity_events").select(["ts", "kind", "revision", "summary", "data"]).where("app_id", "=", appId);
    if (query.kinds !== null) q = q.where("kind", "in", query.kinds);
    if (query.since !== null) q = q.where("ts", ">=", query.since);
    const rows = await q.orderBy("ts", "desc").orderBy("id", "desc").limit(query.limit).execute();
    return rows.map((r) => ({
      ts: iso(Number(r.ts)),
      kind: r.kind,
      revision: Number(r.revision),
      summary: r.summary,
      data: JSON.parse(r.data) as Record<string, unknown>,
    }));
  }

  /**
   * Retention sweep for the scheduler: events past 90 days, counters past their day; and the
   * last day's rows of apps that are gone, which a call written after its app's deletion left
   * (on another instance, or here before a crash: see the deletion in context.ts).
   */
  async sweep(): Promise<{ events: number }> {
    const now = this.clock.now();
    const events = await this.db.deleteFrom("activity_events").where("ts", "<", now - ACTIVITY_RETENTION_MS).executeTakeFirst();
    await this.db.deleteFrom("activity_counts").where("day", "<", Math.floor(now / DAY) - 1).execute();
    const orphans = await this.db
      .deleteFrom("activity_events")
      .where("ts", ">=", now - DAY)
      .where(appGone("activity_events"))
      .executeTakeFirst();
    await this.db
      .deleteFrom("activity_counts")
      .where(appGone("activity_counts"))
      .execute();
    return { events: Number(events.numDeletedRows) + Number(orphans.numDeletedRows) };
  }

  async dropApp(appId: string): Promise<void> {
    await this.db.deleteFrom("activity_events").where("app_id", "=", appId).execute();
    await this.db.deleteFrom("activity_counts").where("app_id", "=", appId).execute();
  }
}

/** Validates the query of `GET /app/{id}/activity` (spec: kinds, since, limit). */
export function parseActivityQuery(raw: { kinds?: string; since?: string; limit?: string }): ActivityQuery {
  let kinds: ActivityKind[] | null = null;
  if (raw.kinds !== undefined && raw.kinds !== "") {
    kinds = [];
    for (const part of raw.kinds.split(",")) {
      const kind = part.trim();
      if (!(ACTIVITY_KINDS as readonly string[]).includes(kind)) {
        throw apiError("invalid_request", `unknown activity kind "${kind}"; use ${ACTIVITY_KINDS.join(", ")}`);
      }
      kinds.push(kind as ActivityKind);
    }
  }
  let since: number | null = null;
  if (raw.since !== undefined) {
    since = /^\d{4}-\d{2}-\d{2}T/.test(raw.since) ? Date.parse(raw.since) : NaN;
    if (Number.isNaN(since)) throw apiError("invalid_request", "since must be an ISO 8601 date-time");
  }
  let limit = ACTIVITY_LIMIT_DEFAULT;
  if (raw.limit !== undefined) {
    limit = /^\d+$/.test(raw.limit) ? Number(raw.limit) : NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > ACTIVITY_LIMIT_MAX) {
      throw apiError("invalid_request", `limit must be an integer in 1..${ACTIVITY_LIMIT_MAX}`);
    }
  }
  return { kinds, since, limit };
}

// Tokens and secrets never reach activity rows (DECISIONS §1): anything token-shaped is masked.
const TOKEN_PATTERN = /svc_[a-z]+_[A-Za-z0-9]{20,}/g;

export function redact(text: string): string {
  return text.replace(TOKEN_PATTERN, "[redacted]");
}

/** Keeps only short scalar fields; stacks and source are never copied in by callers. */
function redactData(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) {
    if (key === "stack" || key === "source" || key === "module") continue;
    if (typeof value === "string") out[key] = redact(value).slice(0, STRING_CAP);
    else if (typeof value === "number" || typeof value === "boolean" || value === null) out[key] = value;
    else if (value !== undefined) out[key] = redact(JSON.stringify(value)).slice(0, STRING_CAP);
  }
  return out;
}
