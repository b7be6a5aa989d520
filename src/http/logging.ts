import type { Writable } from "node:stream";
import { pino, stdSerializers, type Logger } from "pino";
import type { App } from "./types.ts";

// Query parameters that carry credentials: `?key=` webhook secrets, `?t=` render tokens.
// `v`: a custom domain visitor's pass (domain/domains/visitors.ts), a bearer credential too.
// `sig`: a signed asset URL's HMAC, which reads the asset for 24 hours with nothing else.
// `state`: the nonce a custom domain's sign-in round trip checks (routes/app-page/shell.ts).
const SECRET_PARAMS = new Set(["key", "t", "token", "code", "v", "sig", "state"]);
// Anything shaped like one of our tokens, wherever in the URL it turns up.
const TOKEN = /svc_[a-z]+_[A-Za-z0-9_-]+/g;

/**
 * The URL as request logs show it: credential parameters cut, however their names are spelled
 * (`?k%65y=` is `?key=` to the query parser), and any token elsewhere too, encoded or not.
 * Headers are never logged.
 */
export function redactUrl(url: string): string {
  const hash = url.indexOf("#");
  const bare = hash < 0 ? url : url.slice(0, hash);
  const q = bare.indexOf("?");
  const path = redactTokens(q < 0 ? bare : bare.slice(0, q));
  if (q < 0) return path;
  const params = bare
    .slice(q + 1)
    .split("&")
    .map((part) => {
      const eq = part.indexOf("=");
      if (eq < 0) return redactTokens(part);
      const name = part.slice(0, eq);
      const value = part.slice(eq + 1);
      if (SECRET_PARAMS.has(decode(name).toLowerCase())) return `${name}=[redacted]`;
      return `${redactTokens(name)}=${redactTokens(value)}`;
    });
  return `${path}?${params.join("&")}`;
}

/** `text` with every token cut; looked for in its decoded form, so `%73vc_…` is found too. */
function redactTokens(text: string): string {
  const plain = decode(text);
  if (!plain.includes("svc_")) return text;
  return plain.replace(TOKEN, "[redacted]");
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    return text;
  }
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

// A request slower than this is worth an operator's attention at the default level.
export const SLOW_REQUEST_MS = 1000;

/**
 * One line per answered request, after it is answered: at `debug`, or at `warn` when it took
 * longer than SLOW_REQUEST_MS; failures are logged where they happen (the error handler). Fastify's
 * own two lines per request at `info` cost a busy server more CPU than its cheapest routes
 * (`/healthz` spent a third of its time building them).
 */
export function installRequestLog(app: App, log: Logger): void {
  const debug = log.isLevelEnabled("debug");
  app.addHook("onResponse", (request, reply, done) => {
    const ms = reply.elapsedTime;
    const line = () => ({ req: request, statusCode: reply.statusCode, ms: Math.round(ms) });
    if (ms > SLOW_REQUEST_MS) request.log.warn(line(), "request answered");
    else if (debug) request.log.debug(line(), "request answered");
    done();
  });
}
