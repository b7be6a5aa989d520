import { Type } from "typebox";
import { DAY } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { authorizeActivity, authorizeDiag } from "../../domain/diagnostics/access.ts";
import { ACTIVITY_KINDS } from "../../domain/diagnostics/activity.ts";
import { shareKey, type Principal } from "../../http/auth.ts";
import { eventStreams } from "../../http/sse.ts";
import type { App } from "../../http/types.ts";
import { activityFilter, callsChart, DIAG_LIVE_SCRIPT, diagnosticsTab, LOG_LINES_SHOWN } from "../../web/pages/console/tabs.ts";
import { viewOf } from "../../domain/logs/index.ts";
import { sessionEnded, streamAccess } from "../app-page/stream-access.ts";
import { consoleKit, Params, type Opened } from "./opened.ts";

const WITHIN_MS = { hour: 3_600_000, day: DAY, week: 7 * DAY } as const;
const DiagFilter = Type.Object({
  kind: Type.Optional(Type.Union([Type.Literal(""), ...ACTIVITY_KINDS.map((k) => Type.Literal(k))])),
  within: Type.Optional(Type.Union([Type.Literal(""), Type.Literal("hour"), Type.Literal("day"), Type.Literal("week")])),
});

/**
 * An app's diagnostics tab: calls and failures per hour, the diag ring (kept live by a session
 * event stream), and durable activity filtered by kind and time. Read as the API reads them.
 */
export default function appDiagnostics(app: App, ctx: Services): void {
  const { open, page, user, summary } = consoleKit(ctx);
  const stream = eventStreams(app, ctx.streams);
  // Pages are signed in by the session cookie.
  const authorized = async (o: Opened) => {
    const caller = { ...user(o), via: "session" as const };
    await authorizeDiag(caller, o.app, ctx.apps);
    await authorizeActivity(caller, o.app, ctx.apps);
  };
  // The same for the live stream as it goes: its session afresh, and the app as it is now.
  const stillAuthorized = (o: Opened) => async (who: Principal | null) => {
    if (who?.kind !== "user") throw sessionEnded();
    await authorized({ ...o, viewer: { ...o.viewer, userId: who.userId }, app: await ctx.apps.find(o.app.id) });
  };

  app.get("/apps/:id/diagnostics", { schema: { ...summary("diagnostics and activity"), params: Params, querystring: DiagFilter } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await authorized(o);
    const kind = request.query.kind ?? "";
    const within = request.query.within ?? "";
    const now = ctx.clock.now();
    const activity = await ctx.activity.list(o.app.id, { kinds: kind === "" ? null : [kind], since: within === "" ? null : now - WITHIN_MS[within], limit: 50 });
    const chart = callsChart(await ctx.callCounts.perHour(o.app.id, now - 7 * DAY), now);
    const lines = ctx.logs.read(o.app.id, { limit: LOG_LINES_SHOWN }).map(viewOf);
    const body = [chart, diagnosticsTab(ctx.diag.list(o.app.id), lines, activity, activityFilter(o.app.id, ACTIVITY_KINDS, { kind, within }))];
    return page(reply, o, "diagnostics", body, DIAG_LIVE_SCRIPT);
  });

  app.get("/apps/:id/diagnostics/live", { schema: { ...summary("new diag entries and log lines (text/event-stream: diag and log events)"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await authorized(o);
    // Re-checked as it goes, as GET /app/{id}/events is: access that ends ends the stream.
    const holder = shareKey(request, user(o).userId);
    const events = stream(request, reply, { holder, allowed: streamAccess(ctx, request, true, stillAuthorized(o)) });
    events.send("hello", {});
    events.onClose(ctx.diag.subscribe(o.app.id, (entry) => events.send("diag", entry)));
    events.onClose(ctx.logs.follow(o.app.id, (lines) => lines.forEach((line) => events.send("log", viewOf(line)))));
    return reply;
  });
}
