import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { apiError } from "../../errors/index.ts";
import { metadataFetchAllowance, OAUTH_ROUTES } from "../../domain/oauth/provider.ts";
import { clientNetwork } from "../../http/auth.ts";
import type { BucketRule } from "../../lib/rate-limit.ts";

// Every registration is a row kept while the client is in use; one network registers a few
// clients an hour (a person's agents), not thousands. Per network, as anonymous creates are.
export const REGISTRATIONS_PER_NETWORK: BucketRule = { name: "oauth-register:ip", capacity: 20, windowMs: 60 * 60 * 1000 };

// An authorization naming a client by its metadata document's URL may make the server fetch it:
// anyone may send one, so a network sends a few a minute, not a stream of fresh URLs.
export const METADATA_CLIENTS_PER_NETWORK: BucketRule = { name: "oauth-cimd:ip", capacity: 60, windowMs: 10 * 60 * 1000 };

// Token requests (a code exchanged, a refresh, a revocation) from one network: an agent refreshes
// once an hour per grant; every refresh writes a row.
export const TOKEN_REQUESTS_PER_NETWORK: BucketRule = { name: "oauth-token:ip", capacity: 300, windowMs: 10 * 60 * 1000 };

// Every authorization a signed-out client starts is a row (the library's interaction, holding the
// request's parameters) kept ten minutes and more: a person's agents start a few, not a stream.
export const AUTHORIZATIONS_PER_NETWORK: BucketRule = { name: "oauth-authorize:ip", capacity: 120, windowMs: 10 * 60 * 1000 };

/** A request over its network's allowance, answered in OAuth's shape (429, Retry-After). */
function overAllowance(ctx: Services, rule: BucketRule, request: { ip: string }, res: ServerResponse, what: string): boolean {
  const decision = ctx.limiter.take([{ rule, key: clientNetwork(request) }]);
  if (decision.allowed) return false;
  res.writeHead(429, { "content-type": "application/json; charset=utf-8", "retry-after": String(Math.max(1, decision.resetSec)), "cache-control": "no-store" });
  res.end(JSON.stringify({ error: "invalid_request", error_description: `too many ${what} from this network; try again later` }));
  return true;
}

/** Whether a request over the library's endpoints is refused by our limits (and answered). */
function limited(ctx: Services, request: { method: string; url: string; ip: string }, res: ServerResponse): boolean {
  // The library matches paths case-insensitively and without a trailing slash: so do the limits.
  const [rawPath = "", query = ""] = request.url.split("?");
  const path = rawPath.toLowerCase().replace(/\/+$/, "");
  if (request.method === "POST" && path === "/oauth/register") return overAllowance(ctx, REGISTRATIONS_PER_NETWORK, request, res, "client registrations");
  if (request.method === "POST" && (path === "/oauth/token" || path === "/oauth/revoke")) return overAllowance(ctx, TOKEN_REQUESTS_PER_NETWORK, request, res, "token requests");
  if (path !== "/oauth/authorize") return false;
  if (overAllowance(ctx, AUTHORIZATIONS_PER_NETWORK, request, res, "authorizations")) return true;
  if ((new URLSearchParams(query).get("client_id") ?? "").startsWith("https://")) {
    return overAllowance(ctx, METADATA_CLIENTS_PER_NETWORK, request, res, "authorizations of metadata-document clients");
  }
  return false;
}

/**
 * Whether the request may make the server fetch one more client metadata document: an authorize
 * naming one paid for it above (in OAuth's 429 shape); on any other endpoint the fetch itself
 * takes from the same allowance, and past it is refused as the library refuses a client it
 * cannot load.
 */
function fetchAllowance(ctx: Services, request: { url: string; ip: string }): () => boolean {
  const path = (request.url.split("?")[0] ?? "").toLowerCase().replace(/\/+$/, "");
  if (path === "/oauth/authorize") return () => true;
  return () => ctx.limiter.take([{ rule: METADATA_CLIENTS_PER_NETWORK, key: clientNetwork(request) }]).allowed;
}

/**
 * The authorization server's protocol endpoints (DECISIONS §17), handed whole to oidc-provider:
 * RFC 8414 metadata, dynamic registration, authorize (and its resume after consent), token,
 * revocation, JWKS. They answer in OAuth's own error shape (`{error, error_description}`), not
 * the service's envelope. Fastify reads no body here: the library reads its own, with its caps.
 */
export default function oauthProtocolRoutes(app: App, ctx: Services): void {
  const root = app as unknown as FastifyInstance;
  void root.register((scope, _options, done) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, _payload, done) => done(null, undefined));
    const pass = async (request: { raw: IncomingMessage; method: string; url: string; ip: string }, reply: { hijack(): void; raw: ServerResponse }) => {
      // The library answers a path of no endpoint of its own with a bare text 404.
      if (!servedByLibrary(request.url)) throw apiError("not_found", `no such OAuth endpoint: ${request.url.split("?")[0] ?? ""}`);
      if (limited(ctx, request, reply.raw)) {
        reply.hijack();
        return;
      }
      const provider = await ctx.oauth.provider();
      // The library builds its endpoints' URLs from the request: it sees the service's own
      // origin, whatever Host or X-Forwarded-Host a client sent.
      const base = new URL(ctx.config.baseUrl);
      request.raw.headers.host = base.host;
      request.raw.headers["x-forwarded-proto"] = base.protocol.slice(0, -1);
      delete request.raw.headers["x-forwarded-host"];
      reply.hijack();
      await metadataFetchAllowance.run(fetchAllowance(ctx, request), () => provider.callback()(request.raw, reply.raw));
    };
    const hidden = { schema: { hide: true } };
    for (const url of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
      scope.route({ method: ["GET", "OPTIONS"], url, ...hidden, handler: pass });
    }
    scope.route({ method: ["GET", "POST", "OPTIONS"], url: "/oauth/*", ...hidden, handler: pass });
    done();
  });
}

/** The library's endpoints, and the paths under them (a resumed authorization: /oauth/authorize/:uid). */
const LIBRARY_PATHS = Object.values(OAUTH_ROUTES);

function servedByLibrary(url: string): boolean {
  // As the library matches them: /oauth/Register is its registration endpoint too.
  const path = (url.split("?")[0] ?? "").toLowerCase();
  if (!path.startsWith("/oauth/")) return true;
  return LIBRARY_PATHS.some((route) => path === route || path.startsWith(`${route}/`));
}
