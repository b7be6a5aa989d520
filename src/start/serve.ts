import type { Writable } from "node:stream";
import { buildApp, type BuiltApp } from "../app.ts";
import type { Config } from "../config/config.ts";
import { migrate, openStore } from "../store/index.ts";
import { firstScreen } from "./first-screen.ts";

/**
 * Opens the store, applies migrations, builds the app and listens; returns the running app. For
 * a person at a terminal (LOG_FORMAT auto, stdout a TTY, or LOG_FORMAT=pretty), it says what it
 * serves in words and logs readable lines; otherwise JSON lines, one per event.
 */
export async function serve(config: Config): Promise<BuiltApp> {
  const forPeople = config.logFormat === "pretty" || (config.logFormat === "auto" && process.stdout.isTTY === true);
  const logStream = forPeople ? await prettyStream() : undefined;
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, prepare: config.databasePrepare });
  try {
    await migrate(store);
  } catch (error) {
    await store.close();
    throw error;
  }
  const built = await buildApp({ config, store, ...(logStream === undefined ? {} : { logStream }) });
  await built.http.listen({ port: config.port, host: config.host });
  if (forPeople) process.stdout.write(firstScreen(config));
  return built;
}

/** pino-pretty as a stream in this process (no transport thread): loaded only when a person reads the logs. */
async function prettyStream(): Promise<Writable> {
  const { default: pretty } = await import("pino-pretty");
  return pretty({ colorize: process.stdout.isTTY === true, translateTime: "HH:MM:ss", ignore: "pid,hostname", sync: true });
}

/**
 * On SIGTERM or SIGINT: `/readyz` turns 503 at once, requests are still served for
 * SHUTDOWN_GRACE_MS (so a load balancer stops sending), then the server stops accepting,
 * finishes in-flight requests and op calls, releases everything and exits. A second signal
 * exits at once.
 */
export function closeOnSignals(built: BuiltApp): void {
  let closing = false;
  const stop = (signal: NodeJS.Signals) => {
    if (closing) {
      built.http.log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    closing = true;
    built.ctx.lifecycle.draining = true;
    const grace = built.ctx.config.shutdownGraceMs;
    built.http.log.info({ signal, graceMs: grace }, "shutting down");
    setTimeout(() => {
      built.http.close().then(
        () => process.exit(0),
        (error: unknown) => {
          built.http.log.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
    }, grace);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
