import type { Writable } from "node:stream";
import { pino, stdSerializers, type Logger } from "pino";

// Query values that carry credentials (`?key=` webhook secrets, `?t=` render tokens) are cut
// from request logs; headers are never logged.
const SECRET_QUERY = /([?&](?:key|t|token|code)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, "$1[redacted]");
}

/** The one logger: Fastify logs requests through it and services log through it. */
export function createLogger(level: string, stream?: Writable): Logger {
  const options = {
    level,
    serializers: {
      req(request: { method: string; url: string; ip?: string; id?: string }) {
        return { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip, id: request.id };
      },
      err: stdSerializers.err,
    },
  };
  return stream === undefined ? pino(options) : pino(options, stream);
}
