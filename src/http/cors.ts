import type { App } from "./types.ts";

/**
 * The app frame is sandboxed without `allow-same-origin`, so its origin is opaque: its requests
 * to us are cross-origin and carry `Origin: null`. It authenticates with
 * `Authorization: Bearer svc_render_…` and never with cookies, so these routes answer CORS with
 * `Access-Control-Allow-Origin: *` and no `Allow-Credentials`. Browsers never attach cookies to
 * a response they may read under `*`, so no other site can use a visitor's session through
 * CORS; and echoing `null` instead would admit every sandboxed or `data:` document anyway, with
 * the added risk of being paired with credentials. Cookie mutations stay behind the Origin rule.
 */
const FRAME_API = /^\/app\/[^/]+\/(api\/[^/]+|diag|diag\/report|load-error\/report|feedback|events|assets(\/.*)?|render-token)$/;

const PREFLIGHT_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, POST, DELETE",
  "Access-Control-Allow-Headers": "authorization, content-type, x-svc-visitor",
  "Access-Control-Max-Age": "600",
};

// The frame's SDK reads the rate-limit wait and the request id of a failure.
const EXPOSED = "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, x-request-id";

export function isFrameApiPath(url: string): boolean {
  return FRAME_API.test(url.split("?")[0] ?? "");
}

export function installFrameCors(app: App): void {
  // Preflights are answered before routing: these paths have no OPTIONS routes of their own.
  app.addHook("onRequest", (request, reply, done) => {
    if (request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined && isFrameApiPath(request.url)) {
      void reply.status(204).headers(PREFLIGHT_HEADERS).send();
      return;
    }
    done();
  });
  app.addHook("onSend", (request, reply, payload, done) => {
    if (isFrameApiPath(request.url)) {
      void reply.header("Access-Control-Allow-Origin", "*");
      void reply.header("Access-Control-Expose-Headers", EXPOSED);
    }
    done(null, payload);
  });
}
