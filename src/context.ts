import type { Writable } from "node:stream";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Clock } from "./config/clock.ts";
import { systemClock } from "./config/clock.ts";
import type { Config } from "./config/config.ts";
import { Apps } from "./domain/apps/apps.ts";
import { Sessions } from "./domain/accounts/sessions.ts";
import { loadSecretsKey } from "./domain/secrets/key.ts";
import { Secrets } from "./domain/secrets/secrets.ts";
import { Users } from "./domain/accounts/users.ts";
import { Tokens } from "./domain/tokens/tokens.ts";
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
  limiter: RateLimiter;
  scheduler: Scheduler;
  log: Logger;
  /** App lifecycle: get, load (with access), create, update, patchSource, activeCode, claim, delete. */
  apps: Apps;
}

export function createContext(deps: AppDeps): AppContext {
  const clock = deps.clock ?? systemClock;
  const db = deps.store.db;
  const log = createLogger(deps.config.logLevel, deps.logStream);
  const tokens = new Tokens(db, clock, deps.config);
  return {
    log,
    scheduler: new Scheduler(db, clock, log),
    config: deps.config,
    clock,
    store: deps.store,
    db,
    users: new Users(db, clock),
    sessions: new Sessions(db, clock),
    tokens,
    secrets: new Secrets(db, clock, loadSecretsKey(deps.config.secretsKey, deps.config.dataDir)),
    limiter: new RateLimiter(clock),
    apps: new Apps(db, clock, tokens, deps.config),
  };
}
