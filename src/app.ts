import { createContext, type AppContext, type AppDeps } from "./context.ts";
import { createServer, type ServerOptions } from "./http/server.ts";
import type { RouteList } from "./http/method-not-allowed.ts";
import type { App } from "./http/types.ts";
import { registerRoutes } from "./routes/index.ts";

export interface BuiltApp {
  http: App;
  ctx: AppContext;
  /** Every registered method and path. */
  routes: RouteList;
}

/**
 * The composition root: builds every service from `deps`, installs every route, and ties their
 * lifetimes to the HTTP server's, so `http.close()` releases everything `deps` handed over.
 */
export async function buildApp(deps: AppDeps, options: ServerOptions = {}): Promise<BuiltApp> {
  const ctx = await createContext(deps);
  let http: App;
  let routes: RouteList;
  try {
    ({ app: http, routes } = await createServer(ctx, options));
  } catch (error) {
    await ctx.executor.close();
    throw error;
  }
  const log = http.log;
  ctx.executor.pool.onEvent = (event) => log.warn({ executor: event }, `executor ${event.type}`);
  registerRoutes(http, ctx);
  http.addHook("onClose", async () => {
    // Kills every workerd process (SIGKILL; see WorkerdProcess.kill) before the store closes.
    await ctx.executor.close();
    await ctx.store.close();
  });
  await http.ready();
  return { http, ctx, routes };
}
