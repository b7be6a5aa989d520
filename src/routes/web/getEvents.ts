import type { ServerResponse } from "node:http";
import { Type } from "typebox";
import { SECOND } from "../../config/clock.ts";
import type { AppContext } from "../../context.ts";
import type { LiveEvent } from "../../domain/events/live-events.ts";
import { apiError } from "../../errors/index.ts";
import { sessionCookieName } from "../../http/auth.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";

/** DECISIONS §5: a comment line every 25 s keeps proxies from closing an idle stream. */
export const PING_MS = 25 * SECOND;

/**
 * `GET /app/{id}/events` (spec Events 2): `hello {revision}` on connect, `revision {revision}`
 * after each publish, `data {keys}` after KV writes (coalesced by the bus), comment pings. A
 * cookie-session stream re-checks its session as it goes and ends with `sse_cookie_expired`.
 */
export default function getEvents(app: App, ctx: AppContext): void {
  const open = new Set<ServerResponse>();
  // Hijacked streams are invisible to Fastify; end them first so the server can close.
  app.addHook("preClose", (done) => {
    for (const res of open) res.end();
    open.clear();
    done();
  });

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
      const viaSession = principal?.kind === "user" && principal.via === "session" ? cookie : undefined;

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        "Content-Type": "text/event-stream; charset=utf-8",
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",
        "Access-Control-Allow-Origin": "*",
        "X-Request-Id": request.id,
      });
      open.add(res);
      const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      send("hello", { revision: record.revision });
      // A cookie stream checks its session before each event and ping, in order, and ends with
      // sse_cookie_expired once the session has lapsed; token streams skip the check.
      let queue = Promise.resolve();
      const checked = (write: () => void) => {
        queue = queue.then(async () => {
          if (res.writableEnded) return;
          if (await stillSignedIn(ctx, viaSession)) {
            write();
            return;
          }
          send("error", { ok: false, error: { kind: "sse_cookie_expired", message: "the session behind this stream has ended; sign in again and reconnect" } });
          res.end();
        });
      };
      const unsubscribe = ctx.live.subscribe(record.id, (event: LiveEvent) => {
        checked(() => (event.type === "revision" ? send("revision", { revision: event.revision }) : send("data", { keys: event.keys })));
      });
      const ping = setInterval(() => checked(() => res.write(": ping\n\n")), PING_MS);
      ping.unref();
      res.on("close", () => {
        clearInterval(ping);
        unsubscribe();
        open.delete(res);
      });
    },
  );
}

async function stillSignedIn(ctx: AppContext, cookie: string | undefined): Promise<boolean> {
  if (cookie === undefined) return true;
  try {
    return (await ctx.sessions.resolve(cookie)) !== null;
  } catch {
    // A store hiccup is not a sign-out; the next ping checks again.
    return true;
  }
}
