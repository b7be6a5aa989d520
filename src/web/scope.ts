import type { FastifyError, FastifyRequest } from "fastify";
import type { Config } from "../config/config.ts";
import { apiError, type ApiError } from "../errors/index.ts";
import { publicOrigin } from "../http/custom-hosts.ts";
import { bodyTooLarge, sendError, toApiError } from "../http/error-handler.ts";
import type { App } from "../http/types.ts";
import { sendPage } from "./layout.ts";
import { errorPage } from "./pages/common.ts";

/** A page family: registered with the services its routes take (the routes layer hands them in). */
export type PageRoute<S> = (app: App, ctx: S) => void;

// A form carries a code, a decision or a password; nothing a page posts comes near this.
const FORM_BODY_LIMIT = 16 * 1024;
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Registers server-rendered pages in their own Fastify scope, where three things differ from the
 * JSON API: HTML form bodies parse (only here, so no API route accepts a cross-site form post),
 * every form POST must carry our Origin (browsers send it on form posts; this also stops login
 * CSRF on `/sign-in`, which has no session to check), and failures render as pages.
 */
export function registerPages<S extends { config: Pick<Config, "baseUrl"> }>(app: App, ctx: S, pages: readonly PageRoute<S>[]): void {
  void app.register((scope: App, _options, done) => {
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: FORM_BODY_LIMIT }, (_request, body, parsed) => {
      parsed(null, Object.fromEntries(new URLSearchParams(String(body))));
    });
    scope.addHook("onRequest", (request, _reply, next) => {
      if (SAFE_METHODS.has(request.method) || request.headers.origin === publicOrigin(request, ctx.config.baseUrl)) return next();
      next(apiError("forbidden", "this form must be sent from this service's own pages (Origin mismatch)"));
    });
    scope.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
      // A form past its parser's cap names that cap; the route's own is the JSON parser's.
      const failure = "code" in error && error.code === "FST_ERR_CTP_BODY_TOO_LARGE" && isForm(request) ? bodyTooLarge(request, FORM_BODY_LIMIT) : toApiError(error, request);
      if (failure.status >= 500) request.log.error({ err: error, requestId: request.id }, "unexpected error on a page");
      // A page's script posting JSON (the claim link's session swap), or a client asking for
      // JSON, reads the envelope like any API client; browsers and forms get a page.
      if (!wantsPage(request)) return sendError(reply, failure);
      void reply.headers(failure.headers);
      return sendPage(reply, errorPage(failure), failure.status);
    });
    for (const page of pages) page(scope, ctx);
    done();
  });
}

function isForm(request: FastifyRequest): boolean {
  return (request.headers["content-type"] ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded");
}

function wantsPage(request: FastifyRequest): boolean {
  const json = (request.headers["content-type"] ?? "").toLowerCase().startsWith("application/json");
  const accept = request.headers.accept ?? "";
  return !json && !(accept.includes("application/json") && !accept.includes("text/html"));
}
