import type { Writable } from "node:stream";
import type { Services } from "./services.ts";
import type { Kysely } from "kysely";
import type { Clock } from "./config/clock.ts";
import { systemClock } from "./config/clock.ts";
import type { Config } from "./config/config.ts";
import { roleSources } from "./domain/access/roles.ts";
import { Apps } from "./domain/apps/apps.ts";
import { findApp, findVersion } from "./domain/apps/queries.ts";
import { EmailVerification } from "./domain/accounts/verification.ts";
import { Mailer } from "./domain/mail/mailer.ts";
import { ShareLinks } from "./domain/shares/links.ts";
import { Shares } from "./domain/shares/shares.ts";
import { TeamExposure } from "./domain/teams/exposure.ts";
import { TeamInvitations } from "./domain/teams/invitations.ts";
import { Teams } from "./domain/teams/teams.ts";
import { AppTransfer } from "./domain/teams/transfer.ts";
import { Versions } from "./domain/versions/versions.ts";
import { Snapshots } from "./domain/snapshots/snapshots.ts";
import { Copies } from "./domain/copies/copies.ts";
import { Builds } from "./domain/builds/builds.ts";
import { BuildQueue } from "./domain/builds/queue.ts";
import { Idempotency } from "./domain/idempotency/idempotency.ts";
import { Templates } from "./domain/templates/templates.ts";
import { Activity, CallCounts, DiagRing } from "./domain/diagnostics/index.ts";
import { secretRedactor } from "./lib/redact.ts";
import { AppRunner } from "./domain/operations/as-app.ts";
import { Stager } from "./domain/operations/stager.ts";
import { Targets } from "./domain/operations/targets.ts";
import { Routines } from "./domain/routines/routines.ts";
import { WebhookDelivery } from "./domain/webhooks/delivery.ts";
import { DeliveryLog } from "./domain/webhooks/delivery-log.ts";
import { Webhooks } from "./domain/webhooks/webhooks.ts";
import { appCode, createRuntime, type CodeSource, type ExecutorTuning, type SecretsSource } from "./runtime/index.ts";
import { Sessions } from "./domain/accounts/sessions.ts";
import { loadSecretsKey } from "./domain/secrets/key.ts";
import { Secrets } from "./domain/secrets/secrets.ts";
import { Users } from "./domain/accounts/users.ts";
import { Pairings } from "./domain/pairing/index.ts";
import { Tokens } from "./domain/tokens/tokens.ts";
import { LiveEvents } from "./domain/events/live-events.ts";
import { Assets } from "./domain/app-page/assets.ts";
import { Feedback } from "./domain/app-page/feedback.ts";
import { FeedbackReplies } from "./domain/app-page/feedback-reply.ts";
import { RenderTokens } from "./domain/app-page/render-tokens.ts";
import { openBlobStore } from "./blobs/open.ts";
import { FsBlobStore } from "./blobs/fs-store.ts";
import { ContentObjects, readObject } from "./blobs/objects.ts";
import { pgLiveTransport } from "./domain/events/pg-transport.ts";
import { LOGS_CHANNEL, PgNotifier } from "./store/notify.ts";
import { AppLogs, pgLogTransport } from "./domain/logs/index.ts";
import { AbuseReports, AuditLog, Directory, Suspensions } from "./domain/operators/index.ts";
import { createOauthServer, OauthGrants } from "./domain/oauth/index.ts";
import { dnsTxtLookup, DomainHosts, Domains, VisitorPasses } from "./domain/domains/index.ts";
import { createHmac } from "node:crypto";
import { createLogger } from "./http/logging.ts";
import { Metrics } from "./metrics/metrics.ts";
import { RateLimiter } from "./http/rate-limit/index.ts";
import { StreamQuota } from "./http/stream-quota.ts";
import { Scheduler } from "./scheduler/scheduler.ts";
import { GroupCommit, LaggingCommit, PgWriteWatch, StampedCache, type Database, type Store } from "./store/index.ts";

/** What the composition root is given: config and the opened store, plus test seams. */
export interface AppDeps {
  config: Config;
  store: Store;
  clock?: Clock;
  /** Where logs go; stdout when omitted. Tests pass a stream to inspect them. */
  logStream?: Writable;
  /**
   * Tests only: hosts served by loopback HTTPS fixtures as if they were public origins. Set in
   * code, never from the environment or a request; every other egress check still applies.
   */
  egressTestOverrides?: { hosts: Record<string, string>; caPem: string };
  /** Start background work (scheduler timers). Tests that drive time by hand turn it off. */
  background?: boolean;
  /** Executor timers and bounds; production defaults when omitted. */
  executorTuning?: Partial<ExecutorTuning>;
}

/** Builds every service and starts the executor pool; `closeContext` releases them. */
export async function createContext(deps: AppDeps): Promise<Services> {
  const clock = deps.clock ?? systemClock;
  const db = deps.store.db;
  // Hot-path reads kept while nothing they join changed (store/caches: WriteWatch on SQLite,
  // PgWriteWatch on PostgreSQL, which falls back to a read per call while its channel is not
  // known to deliver), each cache within its own 32 MiB.
  const { watch } = deps.store;
  const readCache = <V>() => (watch === undefined ? null : new StampedCache<V>(watch));
  const log = createLogger(deps.config.logLevel, deps.logStream);
  if (watch instanceof PgWriteWatch) {
    watch.onHealth((healthy, error) => {
      if (healthy) log.info("read caches: the change channel delivers; reads are kept between changes");
      else log.warn({ err: error }, "read caches: the change channel is lost; reading per call until it is back");
    });
  }
  const tokens = new Tokens(db, clock, deps.config);
  // A listener that fails after a committed write cannot undo it; say so where operators look.
  const writes = new GroupCommit(db, deps.store.dialect);
  const diag = new DiagRing(clock);
  const activity = new Activity(db, clock);
  const callCounts = new CallCounts(db, clock);
  const secretsKey = loadSecretsKey(deps.config.secretsKey, deps.config.dataDir);
  const secrets = new Secrets(db, deps.store.dialect, clock, secretsKey);
  await secrets.assertKeyOpens();
  const users = new Users(db, clock);
  const scheduler = new Scheduler(db, clock, log);
  const streams = new StreamQuota();
  // Kept only where someone may read them (METRICS_TOKEN set); the executor's counts come from it once started.
  let census: (() => { processes: Record<string, number>; isolates: number }) | null = null;
  const metrics =
    deps.config.metricsToken === null
      ? null
      : new Metrics({
          executor: () => census?.() ?? { processes: {}, isolates: 0 },
          builds: () => buildsByState(db),
          schedulerLagMs: () => scheduler.lagMs,
          storePool: () => deps.store.pool?.() ?? null,
          openStreams: () => streams.count,
          readCacheChannel: () => (watch instanceof PgWriteWatch ? watch.healthy() : null),
        });
  // Before anything starts processes or connections: a bucket that cannot be reached fails here.
  const blobs = await openBlobStore(deps.config.blobStore);
  // With S3, app blob values, captured blobs and bundles are objects there; with files they stay
  // in their rows, as the database already keeps them beside those files (backups take both).
  const objects = deps.config.blobStore.kind === "s3" ? new ContentObjects(db, blobs, clock, deps.store.dialect === "sqlite") : null;
  const live = new LiveEvents();
  // Several instances share PostgreSQL: live events travel between them through NOTIFY. Set up
  // before the executor starts, so a failure here leaves no child process behind.
  if (deps.store.dialect === "postgres" && deps.config.databaseUrl !== null) {
    live.useTransport(await pgLiveTransport(live, new PgNotifier(deps.config.databaseUrl, db, log), log));
  }
  // Custom domains (DECISIONS §12): which app each served hostname belongs to, in memory on every
  // instance before the server takes a request (the host routing reads it synchronously).
  const domains = new Domains(db, deps.store.dialect, clock, dnsTxtLookup(deps.config.dnsResolver), live, () => new URL(deps.config.baseUrl).hostname);
  const domainHosts = new DomainHosts(domains, live);
  await domainHosts.start();
  // What apps' code prints; followers on one instance see lines written on any (DECISIONS §18).
  const logs = new AppLogs();
  if (deps.store.dialect === "postgres" && deps.config.databaseUrl !== null) {
    logs.useTransport(await pgLogTransport(logs, new PgNotifier(deps.config.databaseUrl, db, log, LOGS_CHANNEL), log));
  }
  // Signed asset URLs use their own key, derived so that it never doubles as the sealing key.
  const assetSigningKey = createHmac("sha256", secretsKey).update("brickyard asset url signing").digest();
  const assets = new Assets(db, deps.store.dialect, blobs, clock, assetSigningKey, () => deps.config.baseUrl);
  // The runtime reads an app's code and secrets straight from the store, not through Apps, which
  // is built after it (Apps stages a write's isolate in the runtime before the write commits).
  const secretsSource = appSecrets(db, clock, secrets);
  const runtime = await createRuntime({
    store: deps.store,
    clock,
    dataDir: deps.config.dataDir,
    baseUrl: deps.config.baseUrl,
    processes: { claimed: deps.config.executors, free: deps.config.freeExecutors, fresh: deps.config.newExecutors },
    code: appCodeSource(db, objects),
    objects,
    secrets: secretsSource,
    diag,
    activity,
    counts: callCounts,
    ...(metrics === null ? {} : { metrics }),
    redactorFor: async (appId) => secretRedactor(await secretsSource.forApp(appId)),
    logs,
    ...(deps.executorTuning === undefined ? {} : { tuning: deps.executorTuning }),
    ...(deps.egressTestOverrides === undefined ? {} : { egressTestOverrides: deps.egressTestOverrides }),
  });
  const { storage, operations, executor, visitors } = runtime;
  census = () => executor.pool.census();
  storage.onKvChange((appId, key) => live.dataChanged(appId, key));
  const pairings = new Pairings(db, clock, tokens, deps.config);
  const targets = new Targets(users, secrets, clock);
  const buildQueue = new BuildQueue(db, clock);
  const stager = new Stager(targets, operations);
  const apps = new Apps(
    db,
    clock,
    tokens,
    deps.config,
    writes,
    (error, event) => log.error({ err: error, appId: event.appId }, `app ${event.type} listener failed`),
    { cache: readCache(), batch: deps.store.dialect === "postgres" },
    {
      // The app lifecycle calls these inside its own transactions (create with `pair: true`, claim).
      pairing: {
        startBoundPairing: (trx, { appId, label }) => pairings.startBound(appId, label, trx),
        approveBoundPairing: async (trx, { appId, userId }) => void (await pairings.approveBoundToApp(appId, userId, trx)),
      },
      builds: buildQueue,
      staging: stager,
      roles: roleSources(db),
    },
  );
  apps.events.on(async (event) => {
    if (event.type === "published") {
      live.revision(event.appId, event.revision);
      // DECISIONS §3: a UI/backend mismatch is a warning on the write and a durable event.
      if (event.warnings.length > 0) {
        await activity.record(event.appId, "contract_validation", event.revision, `published with ${event.warnings.length} warning(s)`, {
          direction: "ui",
          warnings: event.warnings,
        });
      }
    }
  });
  // An app's data goes with it (deleted or reaped); its own rows cascade from the apps table. Each
  // kind by a listener of its own: one that fails (reported) does not keep the others from running.
  // Asset files first: no sweep finds them once their rows are gone.
  apps.events.on(async (event) => {
    if (event.type === "deleted") await assets.dropApp(event.appId);
  });
  apps.events.on(async (event) => {
    if (event.type === "deleted") await pairings.forgetApp(event.appId);
  });
  // Its open event streams end, on every instance; so does serving its domains (their rows went with it).
  apps.events.on((event) => {
    if (event.type !== "deleted") return;
    live.deleted(event.appId);
    if (domainHosts.serves(event.appId)) live.domainsChanged();
  });
  // What its calls write: values, activity, counts, lines and failures.
  const dropWritten = async (appId: string) => {
    await storage.dropApp(appId);
    await activity.dropApp(appId);
    await callCounts.dropApp(appId);
    diag.drop(appId);
    logs.drop(appId);
  };
  apps.events.on(async (event) => {
    if (event.type !== "deleted") return;
    await dropWritten(event.appId);
    // A call still running may write after that (write-behind commits with its answer, then its
    // outcome is recorded): that goes once its calls have settled. What a crash meanwhile, or
    // another instance's call, leaves, the hourly sweeps take.
    void executor.invocations
      .afterCalls(event.appId)
      ?.then(() => dropWritten(event.appId))
      .catch(() => undefined);
  });
  const runner = new AppRunner(apps, targets, operations);
  // Not awaited: the write answers while the new revision's isolate is built (AppRunner.warm).
  apps.events.on((event) => {
    if (event.type === "published") runner.warm(event.appId, event.revision, event.staged);
  });
  const mailer = new Mailer(db, clock, { smtpUrl: deps.config.smtpUrl, baseUrl: deps.config.baseUrl, log });
  const shares = new Shares(db, deps.store.dialect, clock, apps, users, mailer, () => deps.config.baseUrl);
  const teams = new Teams(db, clock, users, () => deps.config.baseUrl);
  const emailVerification = new EmailVerification(db, clock, mailer, () => deps.config.baseUrl);
  emailVerification.whenVerified(async (userId, email, trx) => void (await shares.takeInvitations(userId, email, trx)));
  const snapshots = new Snapshots(db, deps.store.dialect, clock, apps, storage, objects);
  const versions = new Versions(db, apps, secrets, snapshots, () => deps.config.baseUrl);
  const templates = new Templates(db, deps.store.dialect, clock, apps, assets, () => deps.config.baseUrl);
  const copies = new Copies(db, clock, apps, assets, secrets, templates, buildQueue, () => deps.config.baseUrl, objects);
  const builds = new Builds(db, clock, apps, buildQueue, (input) => copies.publishBuilt(input), deps.config, () => deps.config.baseUrl, log, deps.background !== false, objects);
  apps.events.on(async (event) => {
    if (event.type === "deleted") await builds.cancelForApp(event.appId);
  });
  // Pruning never refuses a write: it follows each publish (a failure is logged by the events).
  apps.events.on(async (event) => {
    if (event.type === "published") await versions.prune(event.appId, event.revision);
  });
  const lagging = deps.store.dialect === "sqlite" ? new LaggingCommit(db) : null;
  const deliveryLog = new DeliveryLog(writes, lagging, (error) => log.warn({ err: error }, "a webhook delivery record was not stored"));
  return {
    lifecycle: { draining: false },
    // Operators (DECISIONS §15): a suspension ends the app's open event streams on every instance.
    suspensions: new Suspensions(db, clock, live),
    abuseReports: new AbuseReports(db, clock),
    auditLog: new AuditLog(db, clock),
    directory: new Directory(db, clock),
    domains,
    domainHosts,
    visitors,
    // Its own key, derived so that it never doubles as the sealing key.
    visitorPasses: new VisitorPasses(createHmac("sha256", secretsKey).update("brickyard visitor passes").digest()),
    // MCP's authorization server (DECISIONS §17), made on its first request.
    oauth: createOauthServer(
      db,
      {
        baseUrl: () => deps.config.baseUrl,
        secretsKey,
        ...(deps.egressTestOverrides === undefined ? {} : { fetchOverrides: deps.egressTestOverrides }),
      },
      new OauthGrants(db, clock),
    ),
    builds,
    idempotency: new Idempotency(db, clock),
    versions,
    snapshots,
    objects,
    blobTrash: blobs instanceof FsBlobStore ? { sweep: () => blobs.sweepTrash() } : null,
    copies,
    templates,
    shares,
    teams,
    teamInvitations: new TeamInvitations(db, deps.store.dialect, clock, teams, users, mailer, () => deps.config.baseUrl),
    teamExposure: new TeamExposure(db, clock, teams),
    transfer: new AppTransfer(db, deps.store.dialect, clock, apps, teams, users, secrets, () => deps.config.baseUrl),
    mailer,
    emailVerification,
    shareLinks: new ShareLinks(db, deps.store.dialect, clock, apps, () => deps.config.baseUrl),
    runner,
    stager,
    routines: new Routines(db, deps.store.dialect, clock, apps, runner, deps.config),
    webhooks: new Webhooks(db, deps.store.dialect, clock, apps, runner, deps.config, deliveryLog),
    deliveries: new WebhookDelivery(db, clock, runner, deliveryLog, readCache()),
    storage,
    diag,
    activity,
    callCounts,
    executor,
    operations,
    log,
    scheduler,
    metrics,
    config: deps.config,
    clock,
    store: deps.store,
    db,
    users,
    sessions: new Sessions(db, clock),
    tokens,
    secrets,
    pairings,
    limiter: new RateLimiter(clock),
    apps,
    live,
    logs,
    streams,
    renderTokens: new RenderTokens(db, deps.store.dialect, clock, tokens),
    assets,
    feedback: new Feedback(db, clock),
    feedbackReplies: new FeedbackReplies(db, mailer),
  };
}

/** Builds by state, for the metrics (a scrape's query, never a hot path's). */
async function buildsByState(db: Kysely<Database>): Promise<Record<string, number>> {
  const rows = await db.selectFrom("builds").select((eb) => ["state", eb.fn.countAll().as("n")]).groupBy("state").execute();
  return Object.fromEntries(rows.map((row) => [row.state, Number(row.n)]));
}

/** Secrets belong to (owner, manifest id); an unclaimed app has none, and neither has one gone. */
function appSecrets(db: Kysely<Database>, clock: Clock, secrets: Secrets): SecretsSource {
  return {
    async forApp(appId) {
      const app = await findApp(db, appId);
      if (app === null || app.ownerUserId === null || (app.expiresAt !== null && app.expiresAt <= clock.now())) return {};
      return secrets.valuesFor({ ownerUserId: app.ownerUserId, manifestId: app.manifestId });
    },
  };
}

/** The executor loads code by (app, revision) from the kept revisions (see appCode). */
function appCodeSource(db: Kysely<Database>, objects: ContentObjects | null): CodeSource {
  return {
    async load(appId, revision) {
      const code = await findVersion(db, appId, revision);
      if (code === null) return null;
      if (code.buildDigest === null) return appCode(code.module, code.manifest);
      const bundle = await db.selectFrom("build_bundles").select(["bundle", "object_hash", "node_builtins"]).where("input_digest", "=", code.buildDigest).executeTakeFirst();
      if (bundle === undefined) throw new Error(`the bundle ${code.buildDigest} of revision ${revision} of app ${appId} is missing`);
      const text = bundle.object_hash === null ? bundle.bundle : (await readObject(objects, bundle.object_hash)).toString("utf8");
      return appCode(code.module, code.manifest, { module: text, nodeBuiltins: Number(bundle.node_builtins) > 0 });
    },
  };
}
