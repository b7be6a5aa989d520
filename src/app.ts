import { createContext, type AppContext, type AppDeps } from "./context.ts";
import { createServer, type ServerOptions } from "./http/server.ts";
import type { RouteList } from "./http/method-not-allowed.ts";
import type { App } from "./http/types.ts";
import { registerRoutes } from "./routes/index.ts";
import { Reaper } from "./scheduler/reaper.ts";

export interface BuiltApp {
  http: App;
  ctx: AppContext;
  /** Every registered method and path. */
  routes: RouteList;
  /** The unclaimed-app reaper, already started; tests call `reapOnce()` after moving the clock. */
  reaper: Reaper;
}

/**
 * The composition root: builds every service from `deps`, installs every route, and ties their
 * lifetimes to the HTTP server's, so `http.close()` releases everything `deps` handed over.
 */
export async function buildApp(deps: AppDeps, options: ServerOptions = {}): Promise<BuiltApp> {
  const ctx = createContext(deps);
  const { app: http, routes } = await createServer(ctx, options);
  registerRoutes(http, ctx);
  const reaper = new Reaper(ctx.apps, () => ctx.clock.now(), http.log);
  http.addHook("onClose", async () => {
    await reaper.stop();
    await ctx.store.close();
  });
  await http.ready();
  reaper.start();
  return { http, ctx, routes, reaper };
}
