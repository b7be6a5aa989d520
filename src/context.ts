import type { Writable } from "node:stream";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Clock } from "./config/clock.ts";
import { systemClock } from "./config/clock.ts";
import type { Config } from "./config/config.ts";
import { Apps } from "./domain/apps/apps.ts";
import { Activity, DiagRing } from "./domain/diagnostics/index.ts";
import { OPERATION_DEADLINE_MS, Operations } from "./domain/operations/index.ts";
import { secretRedactor } from "./domain/secrets/redact.ts";
import { AppStorage } from "./domain/storage/index.ts";
import { Executor } from "./executor/executor.ts";
import type { SecretValues } from "./executor/internal-api/backends.ts";
import type { CodeSource } from "./executor/types.ts";
import { Sessions } from "./domain/accounts/sessions.ts";
import { loadSecretsKey } from "./domain/secrets/key.ts";
import { Secrets } from "./domain/secrets/secrets.ts";
import { Users } from "./domain/accounts/users.ts";
import { Pairings } from "./domain/pairing/index.ts";
import { Tokens } from "./domain/tokens/tokens.ts";
import { LiveEvents } from "./domain/events/live-events.ts";
import { Assets } from "./domain/web/assets.ts";
import { Feedback } from "./domain/web/feedback.ts";
import { RenderTokens } from "./domain/web/render-tokens.ts";
import { openBlobStore } from "./blobs/open.ts";
import { pgLiveTransport } from "./domain/events/pg-transport.ts";
import { PgNotifier } from "./store/notify.ts";
import { createHmac } from "node:crypto";
import { createLogger } from "./http/logging.ts";
import { RateLimiter } from "./http/rate-limit/index.ts";
import { Scheduler } from "./scheduler/scheduler.ts";
import type { Database, Store } from "./store/index.ts";

/** What the composition root is given: config and the opened store, plus test seams. */
export interface AppDeps {
  config: Config;
  store: Store;
  clock?: Clock;
  /** Where logs go; stdout when omitted. Tests pass a stream to inspect them. */
  logStream?: Writable;
  /** Start background work (scheduler timers). Tests that drive time by hand turn it off. */
  background?: boolean;
}

/** Every service, built once per app; routes receive this and nothing global. */
export interface AppContext {
  config: Config;
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
  /** The workerd pool that runs app code. */
  executor: Executor;
  /** Runs declared operations: validation, ceilings, the executor call, the result envelope. */
  operations: Operations;
  /** Live app events (revision, KV data) for `GET /app/{id}/events`. */
  live: LiveEvents;
  /** Render tokens of app pages: minting, rotation, refresh. */
  renderTokens: RenderTokens;
  /** Uploaded assets and their signed URLs. */
  assets: Assets;
  /** Feedback sent from app pages. */
  feedback: Feedback;
}

/** Builds every service and starts the executor pool; `closeContext` releases them. */
export async function createContext(deps: AppDeps): Promise<AppContext> {
  const clock = deps.clock ?? systemClock;
  const db = deps.store.db;
  const log = createLogger(deps.config.logLevel, deps.logStream);
  const tokens = new Tokens(db, clock, deps.config);
  const apps = new Apps(db, clock, tokens, deps.config);
  const storage = new AppStorage(deps.store, clock);
  const diag = new DiagRing(clock);
  const activity = new Activity(db, clock);
  const secretsKey = loadSecretsKey(deps.config.secretsKey, deps.config.dataDir);
  const secrets = new Secrets(db, clock, secretsKey);
  const live = new LiveEvents();
  apps.onPublish((appId, revision) => live.revision(appId, revision));
  storage.onKvChange((appId, key) => live.dataChanged(appId, key));
  // Several instances share PostgreSQL: live events travel between them through NOTIFY. Set up
  // before the executor starts, so a failure here leaves no child process behind.
  if (deps.store.dialect === "postgres" && deps.config.databaseUrl !== null) {
    live.useTransport(await pgLiveTransport(live, new PgNotifier(deps.config.databaseUrl, db, log), log));
  }
  // Signed asset URLs use their own key, derived so that it never doubles as the sealing key.
  const assetSigningKey = createHmac("sha256", secretsKey).update("brickyard asset url signing").digest();
  const assets = new Assets(db, deps.store.dialect, openBlobStore(deps.config), clock, assetSigningKey, () => deps.config.baseUrl);
  const secretValues = appSecretValues(apps, secrets);
  const executor = await Executor.start({
    secrets: secretValues,
    dataDir: deps.config.dataDir,
    processes: deps.config.executors,
    code: appCodeSource(apps),
    storage,
    log: diag,
    clock,
  });
  const pairings = new Pairings(db, clock, tokens, deps.config);
  // The app lifecycle calls these inside its own transactions (create with `pair: true`, claim).
  apps.setPairing({
    startBoundPairing: (trx, { appId, label }) => pairings.startBound(appId, label, trx),
    approveBoundPairing: async (trx, { appId, userId }) => void (await pairings.approveBoundToApp(appId, userId, trx)),
  });
  apps.onDelete((appId) => pairings.forgetApp(appId));
  apps.onDelete((appId) => assets.dropApp(appId));
  return {
    storage,
    diag,
    activity,
    executor,
    operations: new Operations(executor, diag, activity, clock, deps.config.baseUrl, OPERATION_DEADLINE_MS, async (appId) =>
      secretRedactor(await secretValues.valuesFor(appId)),
    ),
    log,
    scheduler: new Scheduler(db, clock, log),
    config: deps.config,
    clock,
    store: deps.store,
    db,
    users: new Users(db, clock),
    sessions: new Sessions(db, clock),
    tokens,
    secrets,
    pairings,
    limiter: new RateLimiter(clock),
    apps,
    live,
    renderTokens: new RenderTokens(db, clock, tokens),
    assets,
    feedback: new Feedback(db, clock),
  };
}

/** Secrets belong to (owner, manifest id); an unclaimed app has none. */
function appSecretValues(apps: Apps, secrets: Secrets): SecretValues {
  return {
    async valuesFor(appId) {
      const app = await apps.get(appId);
      if (app === null || app.ownerUserId === null) return {};
      return secrets.valuesFor({ ownerUserId: app.ownerUserId, manifestId: app.manifestId });
    },
  };
}

/** The executor loads code by (app, revision) from the apps service. */
function appCodeSource(apps: Apps): CodeSource {
  return {
    async load(appId, revision) {
      const code = await apps.codeAt(appId, revision);
      if (code === null) return null;
      return { module: code.module, imports: [...code.manifest.capabilities.imports], routes: code.manifest.routes };
    },
  };
}
