import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../src/config/clock.ts";
import { Activity, DiagRing } from "../../src/domain/diagnostics/index.ts";
import { Operations, type AppRecord, type OperationCall } from "../../src/runtime/operations/index.ts";
import { AppStorage } from "../../src/runtime/storage/index.ts";
import { keyCost } from "../../src/runtime/storage/limits.ts";
import { Executor, type ExecutorTuning } from "../../src/runtime/executor/executor.ts";
import type { PoolEvent } from "../../src/runtime/executor/types.ts";
import type { AppCode, CodeSource } from "../../src/runtime/executor/types.ts";
import { migrate, openStore, type Dialect, type Store } from "../../src/store/index.ts";
import { createTestDatabase } from "./dialects.ts";

/** A real in-process CodeSource: apps published by the test, revisions counted as the spec says. */
export class TestCodeSource implements CodeSource {
  private readonly revisions = new Map<string, AppCode>();
  loads = 0;
  /** This many loads from now fail, as a store that lost its connection would. */
  failNext = 0;

  publish(id: string, module: string, manifest: AppRecord["manifest"], revision = 1): AppRecord {
    this.revisions.set(`${id}:${revision}`, { module, imports: manifest.capabilities?.imports ?? [], origins: manifest.capabilities?.origins ?? [], routes: manifest.routes ?? {} });
    return { id, revision, manifest };
  }

  load(appId: string, revision: number): Promise<AppCode | null> {
    this.loads += 1;
    if (this.failNext > 0) {
      this.failNext -= 1;
      return Promise.reject(new Error("the store is unreachable"));
    }
    return Promise.resolve(this.revisions.get(`${appId}:${revision}`) ?? null);
  }
}

export interface Harness {
  store: Store;
  storage: AppStorage;
  diag: DiagRing;
  activity: Activity;
  code: TestCodeSource;
  executor: Executor;
  ops: Operations;
  events: PoolEvent[];
  /** The app ids whose secrets were read, in order. */
  secretReads: string[];
  /** The first pool event from now on that `matches`. */
  nextEvent(matches: (event: PoolEvent) => boolean): Promise<PoolEvent>;
  /** Calls an op as the owner over http; returns the value or throws the ApiError. */
  call(app: AppRecord, op: string, input?: unknown, extra?: Partial<OperationCall>): Promise<unknown>;
  /** The app's data version and bytes used, as they stand (0 before any write). */
  usageOf(appId: string): Promise<{ dataVersion: number; storedBytes: number }>;
  /** Stops the executor and starts a fresh one on the same store. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  dialect: Dialect;
  processes?: number;
  /** Processes per lane for the first calls of new code (FirstCalls); none unless asked. */
  newProcesses?: number;
  tuning?: Partial<ExecutorTuning>;
  deadlineMs?: number;
  /** Secrets per app id (the issue 5 seam). */
  secrets?: Record<string, Record<string, string>>;
  /** What an app's keys may cost together (KEYS_CAP_BYTES unless lowered to be reached). */
  keysCap?: number;
}

export async function startHarness(o: HarnessOptions): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-exec-"));
  const database = o.dialect === "postgres" ? await createTestDatabase() : null;
  const store = openStore({ databaseUrl: database?.url ?? null, dataDir });
  await migrate(store);
  const clock = systemClock;
  const storage = new AppStorage(store, clock, null, o.keysCap);
  const diag = new DiagRing(clock);
  const activity = new Activity(store.db, clock);
  const code = new TestCodeSource();
  const events: PoolEvent[] = [];
  const secretReads: string[] = [];
  const waiters = new Set<{ matches: (event: PoolEvent) => boolean; resolve: (event: PoolEvent) => void }>();
  const boot = () =>
    Executor.start({
      dataDir,
      processes: o.processes ?? 1,
      ...(o.newProcesses === undefined ? {} : { newProcesses: o.newProcesses }),
      code,
      storage,
      log: diag,
      clock,
      tuning: o.tuning,
      secrets: {
        forApp: (appId) => {
          secretReads.push(appId);
          return Promise.resolve(o.secrets?.[appId] ?? {});
        },
      },
      onEvent: (e) => {
        events.push(e);
        for (const waiter of waiters) {
          if (!waiter.matches(e)) continue;
          waiters.delete(waiter);
          waiter.resolve(e);
        }
        if (process.env.EXEC_DEBUG) console.warn("pool event", JSON.stringify(e));
      },
    });
  const h: Harness = {
    store,
    storage,
    diag,
    activity,
    code,
    events,
    secretReads,
    nextEvent: (matches) => new Promise((resolve) => waiters.add({ matches, resolve })),
    executor: await boot(),
    ops: undefined as unknown as Operations,
    async call(app, op, input, extra) {
      return h.ops.call({ app, role: "owner", op, input, trigger: "http", userId: "user-1", ...extra });
    },
    async usageOf(appId) {
      const usage = await store.db.selectFrom("app_storage_usage").select(["bytes", "data_version"]).where("app_id", "=", appId).executeTakeFirst();
      return { dataVersion: Number(usage?.data_version ?? 0), storedBytes: Number(usage?.bytes ?? 0) };
    },
    async restart() {
      await h.executor.close();
      h.executor = await boot();
      h.ops = new Operations(h.executor, { diag, activity, clock, baseUrl: "http://brickyard.test", ...(o.deadlineMs === undefined ? {} : { deadlineMs: o.deadlineMs }) });
    },
    async close() {
      await h.executor.close();
      await store.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  h.ops = new Operations(h.executor, { diag, activity, clock, baseUrl: "http://brickyard.test", ...(o.deadlineMs === undefined ? {} : { deadlineMs: o.deadlineMs }) });
  return h;
}

/** What an app's keys cost, summed from the keys themselves (what `key_bytes` must equal). */
export async function exactKeyBytes(store: Store, appId: string): Promise<number> {
  let total = 0;
  for (const table of ["app_kv", "app_blobs"] as const) {
    for (const row of await store.db.selectFrom(table).select("key").where("app_id", "=", appId).execute()) total += keyCost(row.key);
  }
  return total;
}

/** `key_bytes` as the usage row keeps it (0 before any write). */
export async function keptKeyBytes(store: Store, appId: string): Promise<number> {
  const row = await store.db.selectFrom("app_storage_usage").select("key_bytes").where("app_id", "=", appId).executeTakeFirst();
  return Number(row?.key_bytes ?? 0);
}

/** The bytes an app's values take, summed from the values themselves (what the usage counter must equal). */
export async function exactUsage(h: Harness, appId: string): Promise<number> {
  const kv = await h.store.db.selectFrom("app_kv").select((eb) => eb.fn.sum<number>("size").as("n")).where("app_id", "=", appId).executeTakeFirst();
  const blobs = await h.store.db.selectFrom("app_blobs").select((eb) => eb.fn.sum<number>("size").as("n")).where("app_id", "=", appId).executeTakeFirst();
  return Number(kv?.n ?? 0) + Number(blobs?.n ?? 0);
}

/** A module whose routes are given as `name: "async (input, env, req) => value"` bodies. */
export function appModule(handlers: Record<string, string>, manifest: object = {}): string {
  const cases = Object.entries(handlers)
    .map(([name, body]) => `${JSON.stringify(name)}: ${body}`)
    .join(",\n");
  return `export const manifest = ${JSON.stringify(manifest)};
const handlers = {${cases}};
export default {
  async fetch(request, env, ctx) {
    const op = request.headers.get("x-svc-op");
    const input = await request.json();
    const value = await handlers[op](input, env, request);
    return Response.json({ ok: true, value });
  },
};
`;
}
