import type { Kysely } from "kysely";
import type { Clock } from "./config/clock.ts";
import { systemClock } from "./config/clock.ts";
import type { Config } from "./config/config.ts";
import { Sessions } from "./domain/accounts/sessions.ts";
import { Users } from "./domain/accounts/users.ts";
import { Activity, DiagRing } from "./domain/diagnostics/index.ts";
import { Operations } from "./domain/operations/index.ts";
import { AppStorage } from "./domain/storage/index.ts";
import { Tokens } from "./domain/tokens/tokens.ts";
import { Executor, type ExecutorTuning } from "./executor/executor.ts";
import type { CodeSource } from "./executor/types.ts";
import { RateLimiter } from "./http/rate-limit/index.ts";
import type { Database, Store } from "./store/index.ts";

/** What the composition root is given: config and the opened store, plus test seams. */
export interface AppDeps {
  config: Config;
  store: Store;
  clock?: Clock;
  /**
   * Where the executor reads app source. The apps service implements it; until it is wired,
   * no app has code and every op call ends in `executor_error`.
   */
  codeSource?: CodeSource;
  /** Executor timers and bounds; production defaults when omitted. */
  executorTuning?: Partial<ExecutorTuning>;
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
  storage: AppStorage;
  diag: DiagRing;
  activity: Activity;
  executor: Executor;
  operations: Operations;
}

const NO_CODE: CodeSource = { load: () => Promise.resolve(null) };

/** Builds every service; starts the workerd pool, which `executor.close()` stops. */
export async function createContext(deps: AppDeps): Promise<AppContext> {
  const clock = deps.clock ?? systemClock;
  const db = deps.store.db;
  const storage = new AppStorage(deps.store, clock);
  const diag = new DiagRing(clock);
  const activity = new Activity(db, clock);
  const executor = await Executor.start({
    dataDir: deps.config.dataDir,
    processes: deps.config.executors,
    code: deps.codeSource ?? NO_CODE,
    storage,
    log: diag,
    // The executor's own timers run on real time even when tests move the app clock.
    clock: systemClock,
    tuning: deps.executorTuning,
  });
  return {
    config: deps.config,
    clock,
    store: deps.store,
    db,
    users: new Users(db, clock),
    sessions: new Sessions(db, clock),
    tokens: new Tokens(db, clock, deps.config),
    limiter: new RateLimiter(clock),
    storage,
    diag,
    activity,
    executor,
    operations: new Operations(executor, diag, activity, clock, deps.config.baseUrl),
  };
}
