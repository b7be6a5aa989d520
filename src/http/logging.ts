import type { Writable } from "node:stream";
import type { FastifyServerOptions } from "fastify";

// Query values that carry credentials (`?key=` webhook secrets, `?t=` render tokens) are cut
// from request logs; headers are never logged.
const SECRET_QUERY = /([?&](?:key|t|token|code)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, "$1[redacted]");
}

export function loggerOptions(level: string, stream?: Writable): FastifyServerOptions["logger"] {
  return {
    level,
    ...(stream === undefined ? {} : { stream }),
    serializers: {
      req(request: { method: string; url: string; ip?: string; id?: string }) {
        return { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip, id: request.id };
      },
    },
  };
}
