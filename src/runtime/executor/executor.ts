import { randomBytes } from "node:crypto";
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../../config/clock.ts";
import { inTree } from "../../config/paths.ts";
import { bundleOf, CodeCache, codeBundle, type CodeBundle } from "./internal-api/code-cache.ts";
import type { VisitorKv } from "../storage/visitor-kv.ts";
import type { LogSink, SecretsSource, StorageBackend } from "./internal-api/backends.ts";
import { BindingHandler } from "./internal-api/bindings.ts";
import { InternalApi } from "./internal-api/server.ts";
import { Invocations } from "./invocations.ts";
import { MemoryCeiling } from "./memory-ceiling.ts";
import { ExecutorPool, type PoolOptions } from "./pool.ts";
import { Quarantine } from "./quarantine.ts";
import type { AppCode, CodeSource, ExecutorCall, ExecutorOutcome, PoolEvent } from "./types.ts";
import type { EgressConfig } from "./workerd-config.ts";
import { DEFAULT_TUNING, type ExecutorTuning } from "./tuning.ts";

export { DEFAULT_TUNING, type ExecutorTuning };

export interface ExecutorOptions {
  /** DATA_DIR; the executor makes a private 0700 directory inside it for config and sockets. */
  dataDir: string;
  /** EXECUTORS: number of workerd processes for claimed apps. */
  processes: number;
  /** FREE_EXECUTORS: processes for unclaimed apps (1 when omitted; 0 runs them with claimed ones). */
  freeProcesses?: number;
  /**
   * NEW_EXECUTORS: processes per lane for the first calls of new apps and new revisions (0 when
   * omitted: they run in their lane). The server runs them: see pool.ts and first-calls.ts.
   */
  newProcesses?: number;
  code: CodeSource;
  /** Secrets for `env`; none when omitted. */
  secrets?: SecretsSource;
  /** Tests only: loopback fixtures served as public origins (see EgressConfig). */
  egressTestOverrides?: EgressConfig["testOverrides"];
  /**
   * App data. workerd caches KV reads (src/executor/README.md): coherence rests on this instance's
   * invalidations reaching every process before a write is answered and, where other instances
   * write too (PostgreSQL), on each call's data version (`ExecutorCall.dataVersion`). Op calls
   * write behind within a lease of the app's room (README: Write-behind), from usage this
   * instance knows (the SQLite store: every write) or the call read (`ExecutorCall.storedBytes`).
   */
  storage: StorageBackend;
  /** Visitors' own stores on custom domains (DECISIONS §12); calls made for a visitor are refused storage without it. */
  visitors?: VisitorKv;
  log: LogSink;
  clock: Clock;
  tuning?: Partial<ExecutorTuning>;
  onEvent?: (event: PoolEvent) => void;
}


/** The most an op call may write without waiting for each write (one lease). */
const WRITE_BEHIND_BYTES = 1024 * 1024;

/** What a warm-up needs of a call: no op, no input, no lease. */
type WarmCall = Omit<ExecutorCall, "op" | "headers" | "body" | "warm" | "allowance">;

const WORKERS_DIR = inTree("runtime/executor/workers");

/**
 * The executor as the rest of Brickyard sees it: the internal API, the invocation registry and
 * the pool of workerd processes, started and stopped together.
 */
export class Executor {
  private staged = 0;

  private constructor(
    readonly invocations: Invocations,
    /** env.KV/BLOB/LOG on the Node side (tests call it directly to prove what it refuses). */
    readonly bindings: BindingHandler,
    readonly pool: ExecutorPool,
    private readonly api: InternalApi,
    private readonly dir: string,
    private readonly storage: StorageBackend,
    private readonly dropCachedReads: (appId: string) => void,
    private readonly bundleOf: (appId: string, code: AppCode, secretsVersion: number) => Promise<CodeBundle>,
  ) {}

  static async start(o: ExecutorOptions): Promise<Executor> {
    const tuning = { ...DEFAULT_TUNING, ...o.tuning };
    removeStaleDirs(o.dataDir);
    const ceiling = MemoryCeiling.detect();
    ceiling?.sweep();
    // Sockets live in a directory only this user can enter: workerd reaches the internal API
    // through it and nothing else on the machine should.
    const dir = mkdtempSync(join(o.dataDir, "executor-"));
    chmodSync(dir, 0o700);
    writeOwner(dir);
    for (const file of ["supervisor.worker.js", "app-shim.worker.js", "egress.worker.js", "kv-cache.worker.js", "gc.worker.js", "background.worker.js", "logs.worker.js"]) copyFileSync(join(WORKERS_DIR, file), join(dir, file));
    const egress: EgressConfig = { key: randomBytes(32).toString("base64url"), ...(o.egressTestOverrides ? { testOverrides: o.egressTestOverrides } : {}) };
    const internalSocketPath = join(dir, "internal.sock");
    const invocations = new Invocations();
    const code = new CodeCache(o.code);
    const api = new InternalApi(internalSocketPath, { invocations, code, log: o.log, secrets: o.secrets, egressKey: egress.key });
    // Counts committed KV writes; a read reply carries it so the cache can tell stale from fresh.
    let kvEpoch = 0;
    const bindings = new BindingHandler({ invocations, storage: o.storage, log: o.log, secrets: o.secrets, kvEpoch: () => kvEpoch, ...(o.visitors === undefined ? {} : { visitors: o.visitors }) });
    const poolOptions: PoolOptions = {
      ...tuning,
      dir,
      internalSocketPath,
      size: o.processes,
      freeSize: o.freeProcesses ?? 1,
      newSize: o.newProcesses ?? 0,
      live: (invocation) => invocations.get(invocation) !== undefined,
      ceiling,
      egress,
      bindings: (call) => bindings.handle(call),
    };
    const bundle = (appId: string, revision: number, secretsVersion: number) => codeBundle(code, o.secrets, appId, revision, secretsVersion);
    const pool = new ExecutorPool(poolOptions, o.clock, new Quarantine(o.clock, tuning.quarantineMs), bundle);
    if (o.onEvent !== undefined) pool.onEvent = o.onEvent;
    const dropCachedReads = (appId: string) => pool.invalidate(appId, null, ++kvEpoch);
    const executor = new Executor(invocations, bindings, pool, api, dir, o.storage, dropCachedReads, (appId, code, secretsVersion) => bundleOf(o.secrets, appId, code, secretsVersion));
    try {
      await api.listen();
      await pool.start();
    } catch (error) {
      await executor.close();
      throw error;
    }
    // Called right after the commit, before the writer is answered (no call has run before now).
    o.storage.onKvChange((appId, key) => pool.invalidate(appId, key, ++kvEpoch));
    return executor;
  }

  /** The internal API's socket (tests probe it directly to prove what it refuses). */
  get internalSocketPath(): string {
    return join(this.dir, "internal.sock");
  }

  /**
   * Builds the isolate of an app's revision ahead of its first call, on the process that call
   * will go to. The module's top level runs as in a call, and is in flight as a call is (a
   * runaway there is blamed on this app), but no op runs. Refusals and faults are the next
   * call's to report.
   */
  warm(call: WarmCall): Promise<ExecutorOutcome> {
    return this.pool.invoke({ ...call, op: "", headers: {}, body: "", warm: true });
  }

  /**
   * Starts warm()'s build for code a source write is about to publish (checked, not committed),
   * so that it runs while the write commits. The isolate goes under a key of its own, which this
   * returns with the build's outcome to come; the warm-up of the revision that write publishes
   * names the key as `adopt` to take the isolate over. A write that fails leaves it until the
   * app's next staged build supersedes it (IsolateTable), or it idles out.
   */
  async stage(call: Omit<WarmCall, "revision" | "staged" | "adopt">, code: AppCode): Promise<{ key: string; built: Promise<unknown> }> {
    const seq = ++this.staged;
    const key = `${call.appId}:staged-${seq}:${call.secretsVersion}`;
    const bundle = await this.bundleOf(call.appId, code, call.secretsVersion);
    // Never rejects: like a warm-up's, its refusals and faults are the next call's to report.
    const built = this.warm({ ...call, revision: 0, staged: { key, code: bundle, seq } }).catch(() => undefined);
    return { key, built };
  }

  /**
   * Runs one op call. A write op of an app that imports KV gets a lease on its room when one can
   * be held: its writes up to that size commit with its result instead of one by one.
   */
  async invoke(call: ExecutorCall): Promise<ExecutorOutcome> {
    const invocation = this.invocations.get(call.headers["x-svc-invocation"]);
    const kv = invocation !== undefined && invocation.caps.has("kv");
    // PostgreSQL: the app's data version as it stands now (its row may be a cached read), for an
    // app whose code can read its values. Another instance wrote them since this one last
    // looked: its cached reads go (the drop rides on this call's own frame, so before the op runs).
    const seen = !this.storage.soleWriter && kv ? await this.storage.seenUsage(call.appId) : undefined;
    if (seen !== undefined && (await this.storage.dataVersions.check(call.appId, seen.version))) this.dropCachedReads(call.appId);
    // A visitor's writes go to their own store, one by one: no room of the app's is held for them.
    if (invocation === undefined || invocation.access !== "write" || !kv || invocation.visitor !== undefined) return this.pool.invoke(call);
    const lease = this.storage.lease(invocation.appId, WRITE_BEHIND_BYTES, seen);
    if (lease === null) return this.pool.invoke(call);
    invocation.lease = lease;
    try {
      return await this.pool.invoke({ ...call, allowance: lease.remaining });
    } finally {
      lease.release();
    }
  }

  healthy(): boolean {
    return this.pool.healthy();
  }

  async close(): Promise<void> {
    await this.pool.close();
    await this.api.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Each executor directory names the process that made it, so a later start can tell it is stale. */
const OWNER_FILE = "owner.pid";

function writeOwner(dir: string): void {
  writeFileSync(join(dir, OWNER_FILE), String(process.pid), { mode: 0o600 });
}

/**
 * Executor directories left behind by instances that died without closing (a crash, SIGKILL):
 * removed at start, unless the process that made one is still running (tests run several
 * instances on one data directory's parent, and a second instance may share DATA_DIR).
 */
function removeStaleDirs(dataDir: string): void {
  for (const { dir, owner } of executorDirs(dataDir)) if (owner === null || !alive(owner)) rmSync(dir, { recursive: true, force: true });
}

/** The instances serving from `dataDir` now: the live owners of its executor directories, this process aside. */
export function liveInstances(dataDir: string): number[] {
  return executorDirs(dataDir).flatMap(({ owner }) => (owner !== null && owner !== process.pid && alive(owner) ? [owner] : []));
}

/** Each executor directory under `dataDir` and the pid that made it (null: made before owner files existed). */
function executorDirs(dataDir: string): { dir: string; owner: number | null }[] {
  let entries: string[];
  try {
    entries = readdirSync(dataDir).filter((name) => name.startsWith("executor-"));
  } catch {
    return [];
  }
  return entries.map((name) => {
    const dir = join(dataDir, name);
    try {
      const owner = Number(readFileSync(join(dir, OWNER_FILE), "utf8"));
      return { dir, owner: Number.isInteger(owner) && owner > 0 ? owner : null };
    } catch {
      return { dir, owner: null };
    }
  });
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, owned by someone else
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
