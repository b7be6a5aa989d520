import { randomUUID } from "node:crypto";
import cookie from "@fastify/cookie";
import Fastify, { LogController, type FastifyBaseLogger } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Logger } from "pino";
import type { Config } from "../config/config.ts";
import type { AuthDeps } from "./auth.ts";
import { routeFamily, type Metrics } from "../metrics/metrics.ts";
import { installFrameCors } from "./cors.ts";
import { installRequestLog } from "./logging.ts";
import { LazyRequestLogger } from "./request-logger.ts";
import { clientError, expectationFailed, frameworkError } from "./client-errors.ts";
import { capConnections } from "./connection-caps.ts";
import { installErrorHandler } from "./error-handler.ts";
import { installNulGuard } from "./nul-guard.ts";
import { installNotFound, type RouteList } from "./method-not-allowed.ts";
import { installOpenApi } from "./openapi.ts";
import { installPacing } from "./pacing.ts";
import { installFairShare, type FairShare } from "./fair-share/install.ts";
import { ErrorEnvelope, errorResponses } from "./schemas.ts";
import { customHostRewriter, type HostRouting } from "./custom-hosts.ts";
import type { App } from "./types.ts";
import { installForwarded } from "./proxy.ts";
import { installJsonBodies } from "./json-body.ts";
import { validatorCompiler } from "./validation.ts";
import { lazySerializers, lazyValidators } from "./lazy-schemas.ts";

// Above every per-field cap (module and ui are 256 KiB each), so requests fail with the precise
// kind (`module_too_large`) rather than a generic 413; routes with smaller caps set their own.
export const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024;

/** A hop count trusts that many proxies nearest to us, whatever their addresses. */
function trustProxyOption(trust: false | number | string[]): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === "number" ? (_address, hop) => hop < trust : trust;
}

/** A Fastify instance with our validation, errors, logging and OpenAPI installed; no routes yet. */
/** What the server is made of: the logger, the config it reads, and what telling callers apart takes (fair share). */
export interface ServerDeps extends AuthDeps {
  log: Logger;
  config: Pick<Config, "baseUrl" | "trustProxy" | "requestTimeoutMs" | "maxConnections">;
  /** Where each answered request is counted, when metrics are kept. */
  metrics: Metrics | null;
  /** Custom domains: which app a request's Host is (custom-hosts.ts). */
  domainHosts: HostRouting;
}

// A caller's own id for its request, as it may send it: printable ASCII, no spaces, bounded.
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The request's id: the X-Request-Id it came with (a proxy's or a client's, so one id follows a
 * request through every hop), when it is a printable token of at most 128 characters; else ours.
 * Echoed in the answer, on every log line of the request, and carried into the op call it makes.
 */
function requestIdOf(request: { headers: Record<string, string | string[] | undefined> }): string {
  const sent = request.headers["x-request-id"];
  return typeof sent === "string" && REQUEST_ID.test(sent) ? sent : randomUUID();
}

export async function createServer(ctx: ServerDeps): Promise<{ app: App; routes: RouteList; fairShare: FairShare }> {
  // Widened to Fastify's base logger type so every route file shares one `App` type.
  const baseLogger: FastifyBaseLogger = ctx.log;
  const app = Fastify({
    loggerInstance: baseLogger,
    genReqId: requestIdOf,
    childLoggerFactory: LazyRequestLogger.factory,
    // Our own request line instead (installRequestLog).
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    bodyLimit: DEFAULT_BODY_LIMIT,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 500 },
    return503OnClosing: true,
    // A request sent slowly enough held its connection for ever (Fastify turns Node's limit off):
    // one client could hold every file descriptor. Node checks it every connectionsCheckingInterval,
    // and only while headersTimeout is no longer than it.
    requestTimeout: ctx.config.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(60_000, ctx.config.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(ctx.config.requestTimeoutMs / 4)),
    },
    // TRUST_PROXY: only then does X-Forwarded-For name the client (rate limits, logs, records).
    trustProxy: trustProxyOption(ctx.config.trustProxy),
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    // Each route's schemas compile on first use (lazy-schemas.ts).
    schemaController: { compilersFactory: { buildSerializer: lazySerializers() } },
    // A request on an app's custom domain reaches that app's routes only (DECISIONS §12).
    rewriteUrl: customHostRewriter(ctx.domainHosts),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.server.on("checkExpectation", expectationFailed);
  capConnections(app.server, { total: ctx.config.maxConnections, perNetwork: ctx.config.trustProxy === false });
  app.setValidatorCompiler(lazyValidators(validatorCompiler()));
  installRequestLog(app, ctx.log);
  const { metrics } = ctx;
  if (metrics !== null) {
    // Counted as answered; no await, no store write on the way (DECISIONS §16).
    app.addHook("onResponse", (request, reply, done) => {
      metrics.httpRequest(routeFamily(request.routeOptions.url), request.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }
  installErrorHandler(app);
  const routes = installNotFound(app);
  app.addSchema(ErrorEnvelope);
  await installOpenApi(app, ctx.config.baseUrl);
  await app.register(cookie);
  installFrameCors(app);

  // Every route documents the error envelope for its failures, without repeating it per route.
  app.addHook("onRoute", (route) => {
    route.schema = { ...route.schema, response: { ...errorResponses, ...(route.schema?.response as object | undefined) } };
  });
  if (ctx.config.trustProxy !== false) installForwarded(app);
  installNulGuard(app);
  installJsonBodies(app);
  const fairShare = installFairShare(app, ctx);
  installPacing(app);
  // A POST with no body at all (`curl -X POST …`) means "no fields" when the body schema is an
  // object that requires none; Fastify would otherwise refuse it as a missing body.
  app.addHook("preValidation", (request, _reply, done) => {
    const schema = request.routeOptions.schema?.body as { type?: unknown; required?: unknown[] } | undefined;
    if (request.body === undefined && schema?.type === "object" && (schema.required ?? []).length === 0) request.body = {};
    done();
  });
  // Draining (close() was called): every answer still being made ends its connection, so a
  // keep-alive client cannot hold the process open; Fastify closes the idle ones itself.
  let draining = false;
  app.addHook("preClose", (done) => {
    draining = true;
    done();
  });
  app.addHook("onSend", (request, reply, payload, done) => {
    void reply.header("x-request-id", request.id);
    if (draining) void reply.header("connection", "close");
    done(null, payload);
  });
  return { app, routes, fairShare };
}
