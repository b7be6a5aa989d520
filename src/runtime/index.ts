import { systemClock, type Clock } from "../config/clock.ts";
import type { Store } from "../store/index.ts";
import type { ContentObjects } from "../blobs/objects.ts";
import { Executor, type ExecutorTuning } from "./executor/executor.ts";
import type { LogSink, SecretsSource } from "./executor/internal-api/backends.ts";
import type { PoolEvent } from "./executor/types.ts";
import type { CodeSource } from "./executor/types.ts";
import type { EgressConfig } from "./executor/workerd-config.ts";
import { Operations, OPERATION_DEADLINE_MS } from "./operations/operations.ts";
import { LineRedactors } from "./logs/redactors.ts";
import type { ActivitySink, CallCountSink, DiagSink, LogLineSink, OpCallSink } from "./ports.ts";
import { VisitorKv } from "./storage/visitor-kv.ts";
import { AppStorage } from "./storage/storage.ts";

// The runtime: what runs app code and keeps its data. The executor (workerd processes, the
// internal API, the workers inside workerd), operations (an op call from its route to its
// envelope) and app storage (KV and blobs, with their caps, leases and batchers). This file is its
// only door: nothing outside src/runtime/ imports a file behind it (npm run check enforces it).

export { checkBundle } from "./bundle-check.ts";
export { ExecutorFault, capabilitiesOf, type AppCode, type CodeSource, type Lane, type RouteSpec } from "./executor/types.ts";
export { liveInstances, type ExecutorTuning } from "./executor/executor.ts";
export type { LogSink, SecretsSource } from "./executor/internal-api/backends.ts";
export type { PoolEvent } from "./executor/types.ts";
export { appCode } from "./operations/app-code.ts";
export { OPERATION_DEADLINE_MS, SLOT_WAIT_MS, type AppRecord, type OperationCall, type Role, type Trigger } from "./operations/operations.ts";
export type { Operations, OperationsDeps } from "./operations/operations.ts";
export { RouteSchemas } from "./operations/schemas.ts";
export { LOG_LEVELS, type ActivitySink, type CallCountSink, type DiagSink, type LogLevel, type LogLine, type LogLineSink, type OpCallSink, type RuntimeManifest } from "./ports.ts";
export { MAX_CALL_BYTES, MAX_CALL_LINES } from "./logs/call-log.ts";
export { APP_CAP_BYTES, KEY_CAP_BYTES, KEY_COST_SQL, keyCost, keyStartsWith, MiB, VALUE_CAP_BYTES, type ListOptions, type ListPage } from "./storage/limits.ts";
export type { AppStorage, KvWrite, StoredBlob } from "./storage/index.ts";
export { recountTotals, type Mended, type Totals } from "./storage/recount.ts";
export { snapshotBytes } from "./storage/snapshot-held.ts";

/** What the composition root gives the runtime: the store, where code and secrets come from, where failures are told. */
export interface RuntimeDeps {
  store: Store;
  /** The app clock (tests move it); the executor's own timers run on real time whatever it is. */
  clock: Clock;
  dataDir: string;
  baseUrl: string;
  /** EXECUTORS, FREE_EXECUTORS, NEW_EXECUTORS. */
  processes: { claimed: number; free: number; fresh: number };
  code: CodeSource;
  secrets: SecretsSource;
  /** S3 as the blob store: app blob values are objects there (blobs/objects.ts); none keeps them in their rows. */
  objects?: ContentObjects | null;
  /** A failed op's message and stack, and the app's `env.LOG` lines. */
  diag: DiagSink & LogSink;
  activity: ActivitySink;
  counts: CallCountSink;
  /** Each op call's outcome, for the metrics (none kept when omitted). */
  metrics?: OpCallSink;
  /** What apps' code prints during op calls, redacted and capped per call (none kept when omitted). */
  logs?: LogLineSink;
  /** Scrubs an app's secret values from failure text before it is returned or recorded. */
  redactorFor: (appId: string) => Promise<(text: string) => string>;
  tuning?: Partial<ExecutorTuning>;
  /** Tests only: loopback fixtures served as public origins (see EgressConfig). */
  egressTestOverrides?: EgressConfig["testOverrides"];
  onEvent?: (event: PoolEvent) => void;
}

export interface Runtime {
  /** Runs declared operations: validation, ceilings, the executor call, the result envelope. */
  operations: Operations;
  /** KV and blob values of every app, with the per-value and per-app caps. */
  storage: AppStorage;
  /** Custom domains' visitors' own KV stores (DECISIONS §12). */
  visitors: VisitorKv;
  /** The workerd processes: health, warm-ups, and the pool's state for tests and benchmarks. */
  executor: Executor;
  close(): Promise<void>;
}

/** Opens app storage and starts the executor's processes; close() stops them. */
export async function createRuntime(deps: RuntimeDeps): Promise<Runtime> {
  const storage = new AppStorage(deps.store, deps.clock, deps.objects ?? null);
  const visitors = new VisitorKv(deps.store, deps.clock);
  const executor = await Executor.start({
    dataDir: deps.dataDir,
    processes: deps.processes.claimed,
    freeProcesses: deps.processes.free,
    newProcesses: deps.processes.fresh,
    code: deps.code,
    secrets: deps.secrets,
    storage,
    visitors,
    log: deps.diag,
    clock: systemClock,
    ...(deps.tuning === undefined ? {} : { tuning: deps.tuning }),
    ...(deps.egressTestOverrides === undefined ? {} : { egressTestOverrides: deps.egressTestOverrides }),
    ...(deps.onEvent === undefined ? {} : { onEvent: deps.onEvent }),
  });
  const operations = new Operations(executor, {
    diag: deps.diag,
    activity: deps.activity,
    clock: deps.clock,
    baseUrl: deps.baseUrl,
    deadlineMs: OPERATION_DEADLINE_MS,
    redactorFor: deps.redactorFor,
    counts: deps.counts,
    ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
    ...(deps.logs === undefined ? {} : { logs: { sink: deps.logs, redactors: new LineRedactors(deps.secrets, systemClock) } }),
  });
  return { operations, storage, visitors, executor, close: () => executor.close() };
}
