import type { Kysely } from "kysely";
import type { Clock } from "./config/clock.ts";
import { systemClock } from "./config/clock.ts";
import type { Config } from "./config/config.ts";
import { Apps } from "./domain/apps/apps.ts";
import { Sessions } from "./domain/accounts/sessions.ts";
import { Users } from "./domain/accounts/users.ts";
import { Tokens } from "./domain/tokens/tokens.ts";
import { RateLimiter } from "./http/rate-limit/index.ts";
import { GroupCommit, type Database, type Store } from "./store/index.ts";

/** What the composition root is given: config and the opened store, plus test seams. */
export interface AppDeps {
  config: Config;
  store: Store;
  clock?: Clock;
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
  limiter: RateLimiter;
  /** App lifecycle: get, load (with access), create, update, patchSource, activeCode, claim, delete. */
  apps: Apps;
}

export function createContext(deps: AppDeps): AppContext {
  const clock = deps.clock ?? systemClock;
  const db = deps.store.db;
  const tokens = new Tokens(db, clock, deps.config);
  return {
    config: deps.config,
    clock,
    store: deps.store,
    db,
    users: new Users(db, clock),
    sessions: new Sessions(db, clock),
    tokens,
    limiter: new RateLimiter(clock),
    // A listener that fails after a committed write cannot undo it; say so where operators look.
    apps: new Apps(db, clock, tokens, deps.config, new GroupCommit(db, deps.store.dialect), (error, event) =>
      console.error(`app ${event.type} listener failed for ${event.appId}:`, error),
    ),
  };
}
