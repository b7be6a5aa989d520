import { buildApp, type BuiltApp } from "../app.ts";
import type { Config } from "../config/config.ts";
import { migrate, openStore } from "../store/index.ts";

/** Opens the store, applies migrations, builds the app and listens; returns the running app. */
export async function serve(config: Config): Promise<BuiltApp> {
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    await migrate(store);
  } catch (error) {
    await store.close();
    throw error;
  }
  const built = await buildApp({ config, store });
  await built.http.listen({ port: config.port, host: config.host });
  return built;
}

/** Stops accepting, finishes in-flight requests, releases everything, on SIGTERM or SIGINT. */
export function closeOnSignals(built: BuiltApp): void {
  let closing = false;
  const stop = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    built.http.log.info({ signal }, "shutting down");
    built.http.close().then(
      () => process.exit(0),
      (error: unknown) => {
        built.http.log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}
