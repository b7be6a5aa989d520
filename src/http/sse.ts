import type { ServerResponse } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import { SECOND } from "../config/clock.ts";
import { apiError, type ApiError } from "../errors/index.ts";
import { clientNetwork } from "./auth.ts";
import type { StreamQuota } from "./stream-quota.ts";
import type { App } from "./types.ts";

/** DECISIONS §5: a comment line every 25 s keeps proxies from closing an idle stream. */
export const PING_MS = 25 * SECOND;
/** How long a browser waits before reconnecting a stream that ended (the `retry:` field). */
export const RECONNECT_MS = 2 * SECOND;
/** The same when this instance is shutting down: soon, to another instance behind the balancer. */
export const DRAIN_RECONNECT_MS = 250;
/** What one stream may leave unsent in this process before it is ended as too slow. */
export const MAX_BUFFERED_BYTES = 1024 * 1024;


export interface EventStream {
  send(event: string, data: unknown): void;
  /** Sends `event` as the stream's last word and ends it; the client is told not to come back soon. */
  end(event: string, data: unknown): void;
  /** Runs once when the stream ends, from either side. */
  onClose(cleanup: () => void): void;
}

export interface StreamOptions {
  /** Whose stream it is for the quota (`shareKey`). */
  holder: string;
  headers?: Record<string, string>;
  /**
   * Whether its reader may still read the stream: access can end while it is open (a session
   * ends, a token is revoked, a share or a membership goes, the app turns private). Looked at
   * before each event and ping, in order; events that come together (the lines of one op call)
   * share one look. A refusal goes out as the stream's last event, in the envelope, and ends it
   * (spec Events 2: a session that ended is `sse_cookie_expired`).
   */
  allowed?: () => Promise<ApiError | null>;
}

/**
 * Server-sent event streams of one route family. Hijacked responses are invisible to Fastify,
 * so the family ends its open streams before the server closes. Each stream pings every PING_MS.
 * A stream takes a place in `quota` before it opens (the refusal is a plain error answer) and
 * gives it back when it ends.
 */
export function eventStreams(app: App, quota: StreamQuota): (request: FastifyRequest, reply: FastifyReply, options: StreamOptions) => EventStream {
  const open = new Set<ServerResponse>();
  app.addHook("preClose", (done) => {
    // EventSource reconnects by itself when a stream ends; `retry:` says how soon.
    for (const res of open) res.end(`: this instance is shutting down; reconnect\nretry: ${DRAIN_RECONNECT_MS}\n\n`);
    open.clear();
    done();
  });
  return (request, reply, options) => {
    // A client that left while its request was checked has had its 'close' already: a stream
    // opened now would keep its place, its ping timer and its entry in `open` for ever.
    if (request.raw.socket.destroyed) throw apiError("invalid_request", "the client closed the connection before its stream opened");
    const release = quota.take(options.holder, clientNetwork(request));
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Accel-Buffering": "no",
      "X-Request-Id": request.id,
      // A stream ends when one side leaves or this instance shuts down; its connection goes with
      // it rather than waiting, idle, for a request that will not come (and holding up close).
      Connection: "close",
      ...options.headers,
    });
    open.add(res);
    res.write(`retry: ${RECONNECT_MS}\n\n`);
    const raw = (event: string, data: unknown) => {
      if (res.writableEnded) return;
      // A client that does not read must not make this process hold what it is sent: past the
      // bound the stream ends (EventSource reconnects and catches up from what is kept).
      if (res.writableLength > MAX_BUFFERED_BYTES) {
        // Not end(): its last words would wait behind what the client does not read.
        res.destroy();
        return;
      }
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const write = options.allowed === undefined ? (chunk: () => void) => chunk() : whileAllowed(res, raw, options.allowed);
    const timer = setInterval(() => write(() => void (res.writableEnded || res.write(": ping\n\n"))), PING_MS);
    timer.unref();
    res.on("close", () => {
      clearInterval(timer);
      open.delete(res);
      release();
    });
    return {
      send: (event, data) => write(() => raw(event, data)),
      end: (event, data) =>
        write(() => {
          raw(event, data);
          if (!res.writableEnded) res.end();
        }),
      onClose: (cleanup) => void res.on("close", cleanup),
    };
  };
}

/**
 * Runs each chunk while access holds. A chunk takes the look under way or starts one; chunks run
 * in order, each once its look has answered.
 */
function whileAllowed(res: ServerResponse, raw: (event: string, data: unknown) => void, allowed: () => Promise<ApiError | null>): (chunk: () => void) => void {
  let queue = Promise.resolve();
  let look: Promise<ApiError | null> | null = null;
  return (chunk) => {
    // A look that fails outright (a store hiccup) is no refusal; the next one asks again.
    const current = (look ??= allowed()
      .catch(() => null)
      .finally(() => {
        look = null;
      }));
    queue = queue.then(async () => {
      if (res.writableEnded) return;
      const refusal = await current;
      if (refusal === null) {
        chunk();
        return;
      }
      raw("error", refusal.toEnvelope());
      if (!res.writableEnded) res.end();
    });
  };
}
