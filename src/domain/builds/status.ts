import { iso } from "../../config/clock.ts";
import { revisionEtag, uuidUrl } from "../apps/urls.ts";
import type { BuildIntent, BuildState } from "../../store/schema/builds.ts";
import type { BuildErrorDetails } from "./build-error.ts";
import { isActive, type BuildRow } from "./queries.ts";

/** How long a finished build's status stays readable at its statusUrl. */
export const INSPECTION_MS = 7 * 24 * 60 * 60 * 1000;
/** How long an Idempotency-Key replays the first answer. */
export const IDEMPOTENCY_MS = 24 * 60 * 60 * 1000;
/** A build not started by then is expired; one not finished by its `deadline` too. */
export const QUEUE_DEADLINE_MS = 10 * 60 * 1000;
export const BUILD_DEADLINE_MS = 30 * 60 * 1000;
/** What a client polling a build that has not finished is told to wait. */
const POLL_AFTER_SECONDS = 1;

/** The spec's build status object ("Copy response and build status"). */
export interface BuildStatus {
  ok: true;
  buildId: string;
  intent: BuildIntent;
  state: BuildState;
  sourceEtag: string;
  statusUrl: string;
  attempts: number;
  acceptedAt: string;
  updatedAt: string;
  finishedAt: string | null;
  elapsedMs: number;
  lockState: "locked" | "unresolved";
  queueDeadline: string;
  deadline: string;
  inspectionExpiresAt: string;
  idempotencyExpiresAt: string | null;
  retryAfterSeconds?: number;
  appId: string;
  revision?: number;
  desiredRevision?: number;
  activeRevision?: number;
  url?: string;
  inputDigest: string;
  lockDigest?: string;
  resolvedDependencies?: { server: Record<string, string>; client: Record<string, string> };
  error?: { kind: string; message: string; retryable: boolean; details?: BuildErrorDetails };
  /** Anonymous creates, in the 202 only: the per-app token, shown this once. */
  token?: string;
}

/**
 * The status of `row` at `now`. `sourceEtag` is the ETag of the revision it publishes once
 * published, else of the revision it builds on (what an If-Match would name); `activeRevision`
 * is the app's current revision, when the app exists.
 */
export function buildStatus(row: BuildRow, now: number, baseUrl: string, activeRevision: number | null): BuildStatus {
  const finished = row.finished_at === null ? null : Number(row.finished_at);
  const accepted = Number(row.accepted_at);
  const revision = row.revision === null ? null : Number(row.revision);
  const lock = row.lock === null ? null : (JSON.parse(row.lock) as Record<string, string>);
  return {
    ok: true,
    buildId: row.id,
    intent: row.intent,
    state: row.state,
    sourceEtag: revisionEtag(revision ?? row.base_revision ?? activeRevision ?? 0),
    statusUrl: `${baseUrl}/api/v1/builds/${row.id}`,
    attempts: Number(row.attempts),
    acceptedAt: iso(accepted),
    updatedAt: iso(Number(row.updated_at)),
    finishedAt: finished === null ? null : iso(finished),
    elapsedMs: Math.max(0, (finished ?? now) - accepted),
    lockState: lock === null ? "unresolved" : "locked",
    queueDeadline: iso(accepted + QUEUE_DEADLINE_MS),
    deadline: iso(Number(row.deadline)),
    inspectionExpiresAt: iso((finished ?? Number(row.deadline)) + INSPECTION_MS),
    idempotencyExpiresAt: row.idempotency_key === null ? null : iso(accepted + IDEMPOTENCY_MS),
    ...(isActive(row.state) ? { retryAfterSeconds: POLL_AFTER_SECONDS } : {}),
    appId: row.app_id,
    ...(revision === null ? {} : { revision, url: uuidUrl(baseUrl, row.app_id) }),
    ...(activeRevision === null ? {} : { activeRevision }),
    inputDigest: row.input_digest,
    ...(row.lock_digest === null ? {} : { lockDigest: row.lock_digest }),
    ...(lock === null ? {} : { resolvedDependencies: { server: lock, client: {} } }),
    ...(row.error === null ? {} : { error: JSON.parse(row.error) as NonNullable<BuildStatus["error"]> }),
  };
}
