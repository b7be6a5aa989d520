import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { LiveEvent } from "../../domain/events/live-events.ts";
import { sessionCookieName, shareKey, type Principal } from "../../http/auth.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import { eventStreams } from "../../http/sse.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { refuseSuspended, SUSPENDED_MESSAGE } from "../../domain/apps/suspended.ts";
import { bySession, sessionEnded, streamAccess } from "./stream-access.ts";

/**
 * `GET /app/{id}/events` (spec Events 2): `hello {revision}` on connect, `revision {revision}`
 * after each publish, `data {keys}` after KV writes (coalesced by the bus), comment pings. The
 * stream re-checks its reader's access as it goes (stream-access.ts): a cookie stream whose
 * session ended ends with `sse_cookie_expired`, one whose reader lost the app with the refusal.
 */
export default function getEvents(app: App, ctx: Services): void {
  const stream = eventStreams(app, ctx.streams);

  app.get(
    "/app/:id/events",
    {
      schema: {
        tags: ["web"],
        summary: "Live app events (text/event-stream): hello, revision, data; comment pings every 25 s",
        security: [{ renderToken: [] }, { queryRenderToken: [] }, { appToken: [] }, { userToken: [] }, { session: [] }],
        params: AppIdParams,
        querystring: Type.Object({ t: Type.Optional(Type.String()) }),
      },
    },
    async (request, reply) => {
      const principal = await principalWithQueryToken(ctx, request);
      const cookie = request.cookies[sessionCookieName(ctx.config.baseUrl)];
      if (principal === null && cookie !== undefined && cookie !== "") throw sessionEnded();
      const viewable = async (who: Principal | null) => {
        const { app: record } = await ctx.apps.load(request.params.id, who, "view");
        refuseSuspended(record);
        return record;
      };
      const record = await viewable(principal);
      const person = principal?.kind === "user" || principal?.kind === "render" ? principal.userId : null;
      const events = stream(request, reply, {
        holder: shareKey(request, person),
        headers: { "Access-Control-Allow-Origin": "*" },
        allowed: streamAccess(ctx, request, bySession(principal), viewable),
      });
      events.send("hello", { revision: record.revision });
      const unsubscribe = ctx.live.subscribe(record.id, (event: LiveEvent) => {
        if (event.type === "revision") events.send("revision", { revision: event.revision });
        else if (event.type === "data") events.send("data", { keys: event.keys });
        else if (event.type === "deleted") events.end("error", { ok: false, error: { kind: "app_not_found", message: "this app was deleted" } });
        else events.end("error", { ok: false, error: { kind: "forbidden", message: SUSPENDED_MESSAGE } });
      });
      events.onClose(unsubscribe);
    },
  );
}
