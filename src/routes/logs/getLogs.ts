import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { authorizeLogs, DEFAULT_LIMIT, matches, parseLogQuery, RING_LINES, viewOf } from "../../domain/logs/index.ts";
import { shareKey } from "../../http/auth.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import { ok } from "../../http/schemas.ts";
import { eventStreams } from "../../http/sse.ts";
import type { App } from "../../http/types.ts";
import { LOG_LEVELS } from "../../runtime/index.ts";
import { bySession, streamAccess } from "../app-page/stream-access.ts";
import { AppIdParams } from "../apps/schemas.ts";

const Line = Type.Object({
  time: Type.String({ format: "date-time" }),
  level: Type.Union([Type.Literal("debug"), Type.Literal("info"), Type.Literal("warn"), Type.Literal("error")]),
  op: Type.String(),
  requestId: Type.Union([Type.String(), Type.Null()]),
  message: Type.String(),
});

/** The query of GET /app/{id}/logs; every field is text, checked by parseLogQuery. */
export const LogQuery = Type.Object({
  limit: Type.Optional(Type.String({ description: `lines to return, newest first: 1 to ${RING_LINES}, default ${DEFAULT_LIMIT}` })),
  since: Type.Optional(Type.String({ description: "ISO 8601 date-time: only lines written after it" })),
  op: Type.Optional(Type.String({ description: "only the lines of this operation" })),
  level: Type.Optional(Type.String({ description: `only lines at this level or above: ${LOG_LEVELS.join(", ")}` })),
  follow: Type.Optional(Type.String({ description: "1: stream new lines as server-sent events (`line`), after those since `since` if given" })),
  t: Type.Optional(Type.String({ description: "a render token, for an EventSource that cannot send headers" })),
});

/**
 * `GET /app/{id}/logs` (DECISIONS §18): what the app's code printed during op calls on this
 * instance, newest first; `?follow=1` streams new lines from every instance as they come, under
 * the event-stream quota.
 */
export default function getLogs(app: App, ctx: Services): void {
  const stream = eventStreams(app, ctx.streams);

  app.get(
    "/app/:id/logs",
    {
      schema: {
        tags: ["apps"],
        summary: "What the app's code printed during op calls (console and env.LOG), newest first; ?follow=1 streams new lines",
        security: [{ appToken: [] }, { userToken: [] }, { renderToken: [] }, { queryRenderToken: [] }, { session: [] }],
        params: AppIdParams,
        querystring: LogQuery,
        response: { 200: ok({ lines: Type.Array(Line) }) },
      },
    },
    async (request, reply) => {
      const query = parseLogQuery(request.query);
      const principal = await principalWithQueryToken(ctx, request);
      const record = await ctx.apps.find(request.params.id);
      await authorizeLogs(principal, record, ctx.apps);
      if (!query.follow) return { ok: true as const, lines: ctx.logs.read(record.id, query).map(viewOf) };

      const person = principal?.kind === "user" || principal?.kind === "render" ? principal.userId : null;
      // Re-checked as it goes, as GET /app/{id}/events is: access that ends ends the stream.
      const allowed = streamAccess(ctx, request, bySession(principal), async (who) => authorizeLogs(who, await ctx.apps.find(record.id), ctx.apps));
      const events = stream(request, reply, { holder: shareKey(request, person), allowed });
      events.onClose(
        ctx.logs.follow(record.id, (lines) => {
          for (const line of lines) if (matches(line, query)) events.send("line", viewOf(line));
        }),
      );
      events.send("hello", {});
      // Lines already kept since `since`, oldest first, before the new ones.
      if (query.since !== undefined) for (const line of ctx.logs.read(record.id, query).reverse()) events.send("line", viewOf(line));
      return reply;
    },
  );
}
