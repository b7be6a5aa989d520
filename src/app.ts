import { createContext, type AppDeps } from "./context.ts";
import type { Services } from "./services.ts";
import { createServer } from "./http/server.ts";
import type { RouteList } from "./http/method-not-allowed.ts";
import type { FairShare } from "./http/fair-share/install.ts";
import type { App } from "./http/types.ts";
import { registerRoutes } from "./routes/index.ts";
import { registerJobs } from "./scheduler/jobs.ts";
import { Reaper } from "./scheduler/reaper.ts";

export interface BuiltApp {
  http: App;
  ctx: Services;
  /** Every registered method and path. */
  routes: RouteList;
  /** The lanes of unmetered writes (http/fair-share). */
  fairShare: FairShare;
  /** The unclaimed-app reaper, already started; tests call `reapOnce()` after moving the clock. */
  reaper: Reaper;
}

/**
 * The composition root: builds every service from `deps`, installs every route, and ties their
 * lifetimes to the HTTP server's, so `http.close()` releases everything `deps` handed over.
 */
export async function buildApp(deps: AppDeps): Promise<BuiltApp> {
  const ctx = await createContext(deps);
  let http: App;
  let fairShare: FairShare;
  let routes: RouteList;
  try {
    ({ app: http, routes, fairShare } = await createServer(ctx));
  } catch (error) {
    await ctx.executor.close();
    throw error;
  }
  ctx.executor.pool.onEvent = (event) => {
    // Evictions and channel rotations are routine housekeeping, and a revision leaving the first-call
    // processes is news at most; faults, acquittals, recycles and failed starts are not.
    if (event.type === "channel_rotated" || event.type === "evicted") ctx.log.debug({ executor: event }, `executor ${event.type}`);
    else if (event.type === "graduated") ctx.log.info({ executor: event }, `executor ${event.type}`);
    else if (event.type === "fault") {
      ctx.metrics?.executorFault(event.reason, event.quarantined !== null);
      // One line per request caught in it, with that request's id, beside the process's line.
      for (const reqId of event.requests) ctx.log.warn({ reqId, executor: { type: "fault", slot: event.slot, reason: event.reason } }, "executor fault failed this request's op call");
      ctx.log.warn({ executor: event }, `executor ${event.type}`);
    }
    else ctx.log.warn({ executor: event }, `executor ${event.type}`);
  };
  registerRoutes(http, ctx);
  const reaper = new Reaper(ctx.apps, () => ctx.clock.now(), http.log);
  http.addHook("onClose", async () => {
    // Background work first: nothing may touch the store after it closes.
    await ctx.scheduler.close();
    await ctx.routines.settled();
    await ctx.builds.close();
    // Mail under way finishes writing its outbox row before the store closes.
    await ctx.mailer.settled();
    ctx.mailer.close();
    ctx.domainHosts.close();
    await ctx.live.close();
    await ctx.logs.close();
    // Kills every workerd process (SIGKILL; see WorkerdProcess.kill) before the store closes.
    await ctx.executor.close();
    // The calls that just ended are counted; the counts and the delivery records of the last
    // milliseconds are written while the store is open.
    await ctx.callCounts.close();
    await ctx.deliveries.close();
    await ctx.store.close();
    ctx.assets.close();
  });
  ctx.scheduler.add(reaper.job);
  registerJobs(ctx);
  await http.ready();
  if (deps.background !== false) ctx.scheduler.start();
  // Builds run whether or not timers do: a write kicks the runner, and so does a restart.
  ctx.builds.runner.start();
  return { http, ctx, routes, fairShare, reaper };
}
