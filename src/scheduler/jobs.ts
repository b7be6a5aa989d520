import { HOUR, MINUTE, SECOND } from "../config/clock.ts";
import type { Scheduler } from "./scheduler.ts";

/** A service with a retention sweep the scheduler runs hourly. */
interface Sweeps {
  sweep(): Promise<unknown>;
}

/** What the periodic jobs run: the scheduler, and each service with a job of its own. */
export interface JobDeps {
  scheduler: Scheduler;
  routines: { startDue(now: number, onError: (error: unknown) => void): void };
  log: { error(fields: object, message: string): void };
  activity: Sweeps;
  callCounts: Sweeps;
  deliveries: Sweeps;
  idempotency: Sweeps;
  builds: Sweeps;
  renderTokens: Sweeps;
  tokens: Sweeps;
  sessions: Sweeps;
  emailVerification: Sweeps;
  snapshots: { sweepValues(): Promise<unknown> };
  auditLog: Sweeps;
  abuseReports: Sweeps;
  mailer: Sweeps;
  oauth: { grants: Sweeps };
  domains: { recheck(): Promise<unknown> };
  visitors: Sweeps;
  storage: { sweepOrphans(): Promise<unknown> };
  /** S3 only: objects nothing refers to any more. */
  objects: Sweeps | null;
  /** Files only: deleted files past the hour they wait for backups. */
  blobTrash: Sweeps | null;
}

/** How often due routines are looked for; a routine runs at most this late. */
export const ROUTINE_TICK_MS = 15 * SECOND;

/**
 * Every periodic job but the reaper (which app.ts builds, for tests to drive), each claimed per
 * period through the leases table: routine ticks and the retention sweeps (activity 90 days;
 * delivery bodies 30 days, records 90 days; render tokens once expired, app tokens of apps never
 * made, and user tokens a month after they expired or were revoked; sessions past their end and
 * verification links a day past theirs; snapshot values no snapshot refers to, such as those of deleted apps; values an op
 * wrote after its app was deleted; the audit log and abuse reports a year; the outbox's messages
 * 30 days; the authorization server's codes, tokens and grants once expired; custom domains'
 * visitors' stores idle a year; with S3, every 5 minutes, blob objects nothing refers to, 10
 * minutes after their last touch; with files, deleted files an hour after their deletion).
 */
export function registerJobs(ctx: JobDeps): void {
  // Started, not awaited: slow routines hold up neither the other jobs nor the next tick.
  const routinesFailed = (error: unknown) => ctx.log.error({ err: error, job: "routines" }, "scheduled job failed");
  ctx.scheduler.add({ name: "routines", everyMs: ROUTINE_TICK_MS, lane: "routines", run: (now) => Promise.resolve(ctx.routines.startDue(now, routinesFailed)) });
  ctx.scheduler.add({ name: "activity-sweep", everyMs: HOUR, run: () => ctx.activity.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "call-count-sweep", everyMs: HOUR, run: () => ctx.callCounts.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "delivery-sweep", everyMs: HOUR, run: () => ctx.deliveries.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "idempotency-sweep", everyMs: HOUR, run: () => ctx.idempotency.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "build-sweep", everyMs: HOUR, run: () => ctx.builds.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "render-token-sweep", everyMs: HOUR, run: () => ctx.renderTokens.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "token-sweep", everyMs: HOUR, run: () => ctx.tokens.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "session-sweep", everyMs: HOUR, run: () => ctx.sessions.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "verification-sweep", everyMs: HOUR, run: () => ctx.emailVerification.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "audit-sweep", everyMs: HOUR, run: () => ctx.auditLog.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "abuse-report-sweep", everyMs: HOUR, run: () => ctx.abuseReports.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "outbox-sweep", everyMs: HOUR, run: () => ctx.mailer.sweep().then(() => undefined) });
  // Each run looks again at the custom domains not looked at for 6 hours (DECISIONS §12).
  ctx.scheduler.add({ name: "domain-recheck", everyMs: HOUR, lane: "dns", run: () => ctx.domains.recheck().then(() => undefined) });
  ctx.scheduler.add({ name: "visitor-store-sweep", everyMs: HOUR, run: () => ctx.visitors.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "oauth-sweep", everyMs: HOUR, run: () => ctx.oauth.grants.sweep().then(() => undefined) });
  ctx.scheduler.add({ name: "snapshot-value-sweep", everyMs: HOUR, run: () => ctx.snapshots.sweepValues().then(() => undefined) });
  ctx.scheduler.add({ name: "orphan-value-sweep", everyMs: HOUR, run: () => ctx.storage.sweepOrphans().then(() => undefined) });
  const { objects } = ctx;
  // Often: an app overwriting its blob values leaves an object per write until then.
  if (objects !== null) ctx.scheduler.add({ name: "object-sweep", everyMs: 5 * MINUTE, lane: "objects", run: () => objects.sweep().then(() => undefined) });
  const { blobTrash } = ctx;
  if (blobTrash !== null) ctx.scheduler.add({ name: "blob-trash-sweep", everyMs: HOUR, run: () => blobTrash.sweep().then(() => undefined) });
}
