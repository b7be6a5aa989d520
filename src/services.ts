import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Clock } from "./config/clock.ts";
import type { Config } from "./config/config.ts";
import type { EmailVerification } from "./domain/accounts/verification.ts";
import type { Sessions } from "./domain/accounts/sessions.ts";
import type { Users } from "./domain/accounts/users.ts";
import type { Apps } from "./domain/apps/apps.ts";
import type { Builds } from "./domain/builds/builds.ts";
import type { Copies } from "./domain/copies/copies.ts";
import type { Activity, CallCounts, DiagRing } from "./domain/diagnostics/index.ts";
import type { LiveEvents } from "./domain/events/live-events.ts";
import type { AppLogs } from "./domain/logs/index.ts";
import type { AbuseReports, AuditLog, Directory, Suspensions } from "./domain/operators/index.ts";
import type { OauthServer } from "./domain/oauth/index.ts";
import type { DomainHosts, Domains, VisitorPasses } from "./domain/domains/index.ts";
import type { Idempotency } from "./domain/idempotency/idempotency.ts";
import type { Mailer } from "./domain/mail/mailer.ts";
import type { AppRunner } from "./domain/operations/as-app.ts";
import type { Stager } from "./domain/operations/stager.ts";
import type { Pairings } from "./domain/pairing/index.ts";
import type { Routines } from "./domain/routines/routines.ts";
import type { Secrets } from "./domain/secrets/secrets.ts";
import type { ShareLinks } from "./domain/shares/links.ts";
import type { Shares } from "./domain/shares/shares.ts";
import type { Snapshots } from "./domain/snapshots/snapshots.ts";
import type { ContentObjects } from "./blobs/objects.ts";
import type { TeamExposure } from "./domain/teams/exposure.ts";
import type { TeamInvitations } from "./domain/teams/invitations.ts";
import type { Teams } from "./domain/teams/teams.ts";
import type { AppTransfer } from "./domain/teams/transfer.ts";
import type { Templates } from "./domain/templates/templates.ts";
import type { Tokens } from "./domain/tokens/tokens.ts";
import type { Versions } from "./domain/versions/versions.ts";
import type { Assets } from "./domain/app-page/assets.ts";
import type { Feedback } from "./domain/app-page/feedback.ts";
import type { FeedbackReplies } from "./domain/app-page/feedback-reply.ts";
import type { RenderTokens } from "./domain/app-page/render-tokens.ts";
import type { WebhookDelivery } from "./domain/webhooks/delivery.ts";
import type { Webhooks } from "./domain/webhooks/webhooks.ts";
import type { RateLimiter } from "./http/rate-limit/index.ts";
import type { Metrics } from "./metrics/metrics.ts";
import type { StreamQuota } from "./http/stream-quota.ts";
import type { AppStorage, Operations, Runtime } from "./runtime/index.ts";
import type { Scheduler } from "./scheduler/scheduler.ts";
import type { Database, Store } from "./store/index.ts";

/**
 * What the composition root (context.ts) hands the routes: every service, built once per process,
 * and nothing global. Below the routes, nothing sees this whole: http/ and the scheduler take the
 * few services they use as parameters of their own, and the runtime takes ports (runtime/ports.ts).
 */
export interface Services {
  config: Config;
  /** Whether this instance still wants traffic: false from the first SIGTERM on (`/readyz`). */
  lifecycle: { draining: boolean };
  clock: Clock;
  store: Store;
  db: Kysely<Database>;
  users: Users;
  sessions: Sessions;
  tokens: Tokens;
  secrets: Secrets;
  pairings: Pairings;
  limiter: RateLimiter;
  scheduler: Scheduler;
  log: Logger;
  /** App lifecycle: get, load (with access), create, update, patchSource, activeCode, claim, delete. */
  apps: Apps;
  /** KV and blob values of every app, with the per-value and per-app caps. */
  storage: AppStorage;
  /** The in-memory diagnostic ring buffer (50 entries per app). */
  diag: DiagRing;
  /** Durable runtime-failure events. */
  activity: Activity;
  /** Op calls and failures per app per hour, for the console's chart. */
  callCounts: CallCounts;
  /** What runs app code and keeps its data: the executor's processes, their health and pool. */
  executor: Runtime["executor"];
  /** Runs declared operations: validation, ceilings, the executor call, the result envelope. */
  operations: Operations;
  /** Where every op call starts: assembles the app's manifest, plan and secrets version. */
  runner: AppRunner;
  /** A source write's isolate, built while the write commits (the app lifecycle's StagingSeam). */
  stager: Stager;
  /** Timer-driven op calls (issue 8); the scheduler's `routines` job ticks them. */
  routines: Routines;
  /** Webhook CRUD and the delivery log. */
  webhooks: Webhooks;
  /** The steps of a delivery to `POST /api/v1/hooks/{id}`, and the delivery retention sweep. */
  deliveries: WebhookDelivery;
  /** Live app events (revision, KV data) for `GET /app/{id}/events`. */
  live: LiveEvents;
  /** Operators stop apps and accounts, and lift it (DECISIONS §15). */
  suspensions: Suspensions;
  /** Anyone's reports about an app, read in /admin. */
  abuseReports: AbuseReports;
  /** Who did what: operators read all of it, a person their own. */
  auditLog: AuditLog;
  /** Accounts and apps as operators search them. */
  directory: Directory;
  /** Custom domains of apps: add, verify, re-check, remove (DECISIONS §12). */
  domains: Domains;
  /** Which app each served custom hostname belongs to, in memory (the host routing's lookup). */
  domainHosts: DomainHosts;
  /** Custom domains' visitors' own KV stores: swept hourly when idle a year. */
  visitors: Runtime["visitors"];
  /** Passes that tie an anonymous visitor of a custom domain to their own store. */
  visitorPasses: VisitorPasses;
  /** MCP's OAuth authorization server (DECISIONS §17) and the grants people gave its clients. */
  oauth: OauthServer;
  /** What apps' code printed during op calls: this instance's rings, and followers of every instance's lines. */
  logs: AppLogs;
  /** Prometheus metrics of this instance, or null when METRICS_TOKEN is unset (none are kept). */
  metrics: Metrics | null;
  /** Places for open event streams (per process). */
  streams: StreamQuota;
  /** Render tokens of app pages: minting, rotation, refresh. */
  renderTokens: RenderTokens;
  /** Uploaded assets and their signed URLs. */
  assets: Assets;
  /** Feedback sent from app pages. */
  feedback: Feedback;
  /** Owners' replies to feedback, by mail. */
  feedbackReplies: FeedbackReplies;
  /** Apps shared with people: invitations, grants, the roles they give (issue 15). */
  shares: Shares;
  /** Template listings: draft, media, publish, disable, the public list. */
  templates: Templates;
  /** Copies of apps into new private apps, with their data when asked; the remixable switch. */
  copies: Copies;
  /** Captures of an app's KV and blobs, restored with a revision's code (content-addressed). */
  snapshots: Snapshots;
  /** S3 as the blob store: blob values, captured blobs and bundles as objects there; null otherwise. */
  objects: ContentObjects | null;
  /** Files as the blob store: its trash of deleted files, kept an hour for backups; null with S3. */
  blobTrash: { sweep(): Promise<unknown> } | null;
  /** Builds of modules that import npm packages: accepted from writes, run from the builds table. */
  builds: Builds;
  /** The first answer to each Idempotency-Key of app writes, replayed for 24 hours. */
  idempotency: Idempotency;
  /** Every kept revision of an app: list, read, restore; pruned to the plan's version_history. */
  versions: Versions;
  /** Teams: accounts that own apps, and the people in them with their roles. */
  teams: Teams;
  /** Invitations to join a team, accepted only from a browser session by the verified address. */
  teamInvitations: TeamInvitations;
  /** A team's exposure summary and the ledger of who its apps are shared with. */
  teamExposure: TeamExposure;
  /** Moving an app into a team, or out of one to a member. */
  transfer: AppTransfer;
  /** Revocable links that give a role to signed-in people who open them. */
  shareLinks: ShareLinks;
  /** Outgoing mail: the outbox table (and SMTP, once built). */
  mailer: Mailer;
  /** Sign-up's emailed link; what an address was sent reaches an account only once it is verified. */
  emailVerification: EmailVerification;
}

