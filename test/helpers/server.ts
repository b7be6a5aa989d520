import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { buildApp, type BuiltApp } from "../../src/app.ts";
import { ManualClock, type Clock } from "../../src/config/clock.ts";
import { loadConfig, type Config } from "../../src/config/config.ts";
import type { ExecutorTuning } from "../../src/runtime/executor/executor.ts";
import { migrate, openStore, type Dialect } from "../../src/store/index.ts";
import type { LogEvent } from "kysely";
import { createTestDatabase } from "./dialects.ts";
import { Client } from "./client.ts";

export interface TestServer extends BuiltApp {
  /** Base URL of the listening server, e.g. http://127.0.0.1:41234 */
  url: string;
  clock: Clock;
  config: Config;
  client: Client;
  close(): Promise<void>;
}

export interface TestServerOptions {
  dialect?: Dialect;
  /** A ManualClock to move time by hand; the system clock when omitted. */
  clock?: Clock | "manual";
  env?: Record<string, string>;
  logStream?: Writable;
  /** Run the scheduler's timer; off by default so tests call `ctx.scheduler.tick()` themselves. */
  background?: boolean;
  /** Sees every query the server's store runs, with its parameters (what a request reads). */
  queryLog?: (event: LogEvent) => void;
  /** Loopback HTTPS fixtures that app code may reach as if they were public origins. */
  egressTestOverrides?: { hosts: Record<string, string>; caPem: string };
  /** The executor's timings and limits, for tests that need its idle evictions or rotations soon. */
  executorTuning?: Partial<ExecutorTuning>;
}

/**
 * A real server on a random loopback port, with its own data directory and (for PostgreSQL) its
 * own database. `close()` stops it and removes both.
 */
export async function startServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-test-"));
  const database = options.dialect === "postgres" ? await createTestDatabase() : null;
  const clock = options.clock === "manual" ? new ManualClock(Date.now()) : (options.clock ?? undefined);
  // Port 0 picks a free port; BASE_URL is fixed up once we know it.
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    EXECUTORS: "1",
    LOG_LEVEL: "warn",
    ...(database === null ? {} : { DATABASE_URL: database.url }),
    ...options.env,
  });
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, ...(options.queryLog === undefined ? {} : { log: options.queryLog }) });
  await migrate(store);
  const built = await buildApp({
    config,
    store,
    logStream: options.logStream,
    background: options.background ?? false,
    ...(options.egressTestOverrides === undefined ? {} : { egressTestOverrides: options.egressTestOverrides }),
    ...(options.executorTuning === undefined ? {} : { executorTuning: options.executorTuning }),
    ...(clock === undefined ? {} : { clock }),
  });
  await built.http.listen({ port: 0, host: "127.0.0.1" });
  const address = built.http.server.address();
  if (address === null || typeof address === "string") throw new Error("server did not bind a TCP port");
  const url = `http://127.0.0.1:${address.port}`;
  if (options.env?.BASE_URL === undefined) {
    // URLs the service hands out must point at this server; config is read-only data, so patch in place.
    config.baseUrl = url;
  }
  return {
    ...built,
    url,
    clock: built.ctx.clock,
    config,
    client: new Client(url, config.baseUrl),
    async close() {
      await built.http.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
