import { apiError } from "../../errors/index.ts";
import { LOG_LEVELS, type LogLevel, type LogLine } from "../../runtime/index.ts";
import { RING_LINES, type LogFilter } from "./ring.ts";

export const DEFAULT_LIMIT = 100;

/** The query of `GET /app/{id}/logs` as it arrives: every field text, checked here. */
export interface RawLogQuery {
  limit?: string;
  since?: string;
  op?: string;
  level?: string;
  follow?: string;
}

/** What `GET /app/{id}/logs` answers with: a line with its time in ISO 8601. */
export interface LogLineView {
  time: string;
  level: LogLevel;
  op: string;
  requestId: string | null;
  message: string;
}

/** Validates the query (DECISIONS §18); a bad field is 400 `invalid_request` naming it. */
export function parseLogQuery(raw: RawLogQuery): LogFilter & { follow: boolean } {
  let limit = DEFAULT_LIMIT;
  if (raw.limit !== undefined) {
    limit = /^\d{1,4}$/.test(raw.limit) ? Number(raw.limit) : NaN;
    if (!(limit >= 1 && limit <= RING_LINES)) throw apiError("invalid_request", `limit must be an integer from 1 to ${RING_LINES}`);
  }
  let since: number | undefined;
  if (raw.since !== undefined) {
    since = /^\d{4}-\d{2}-\d{2}T/.test(raw.since) ? Date.parse(raw.since) : NaN;
    if (Number.isNaN(since)) throw apiError("invalid_request", "since must be an ISO 8601 date-time, such as 2026-11-27T10:00:00Z");
  }
  if (raw.level !== undefined && !LOG_LEVELS.includes(raw.level as LogLevel)) throw apiError("invalid_request", `level must be one of ${LOG_LEVELS.join(", ")}`);
  if (raw.follow !== undefined && !["0", "1", "true", "false"].includes(raw.follow)) throw apiError("invalid_request", "follow must be 1 or 0");
  if (raw.op !== undefined && (raw.op === "" || raw.op.length > 200)) throw apiError("invalid_request", "op must name an operation");
  return {
    limit,
    ...(since === undefined ? {} : { since }),
    ...(raw.op === undefined ? {} : { op: raw.op }),
    ...(raw.level === undefined ? {} : { level: raw.level as LogLevel }),
    follow: raw.follow === "1" || raw.follow === "true",
  };
}

export function viewOf(line: LogLine): LogLineView {
  return { time: new Date(line.time).toISOString(), level: line.level, op: line.op, requestId: line.requestId, message: line.message };
}
