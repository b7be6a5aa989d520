import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { LiveEvent } from "../../domain/events/live-events.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import { sessionCookieName, shareKey } from "../../http/auth.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import { eventStreams } from "../../http/sse.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { refuseSuspended, SUSPENDED_MESSAGE } from "../../domain/apps/suspended.ts";

/**
 * `GET /app/{id}/events` (spec Events 2): `hello {revision}` on connect, `revision {revision}`
 * after each publish, `data {keys}` after KV writes (coalesced by the bus), comment pings. A
 * cookie-session stream re-checks its session as it goes and ends with `sse_cookie_expired`.
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
      if (principal === null && cookie !== undefined && cookie !== "") {
        throw apiError("sse_cookie_expired", "the session behind this stream has ended; sign in again and reconnect");
      }
      const { app: record } = await ctx.apps.load(request.params.id, principal, "view");
      refuseSuspended(record);
      const viaSession = principal?.kind === "user" && principal.via === "session" ? cookie : undefined;

      // A cookie stream checks its session before each event and ping; token streams skip it.
      const person = principal?.kind === "user" || principal?.kind === "render" ? principal.userId : null;
      const events = stream(request, reply, {
        holder: shareKey(request, person),
        headers: { "Access-Control-Allow-Origin": "*" },
        ...(viaSession === undefined ? {} : { signedIn: () => stillSignedIn(ctx, viaSession) }),
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

/** Whether the session behind a cookie stream still holds. */
export async function stillSignedIn(ctx: Services, cookie: string): Promise<boolean> {
  try {
    return (await ctx.sessions.resolve(cookie)) !== null;
  } catch (error) {
    // A refusal (a suspended account) ends the stream; a store hiccup is not a sign-out, and
    // the next ping checks again.
    return !(error instanceof ApiError);
  }
}
