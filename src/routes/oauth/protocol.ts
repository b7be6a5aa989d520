import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";

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
    const pass = async (request: { raw: IncomingMessage }, reply: { hijack(): void; raw: ServerResponse }) => {
      const provider = await ctx.oauth.provider();
      reply.hijack();
      await provider.callback()(request.raw, reply.raw);
    };
    const hidden = { schema: { hide: true } };
    for (const url of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
      scope.route({ method: ["GET", "OPTIONS"], url, ...hidden, handler: pass });
    }
    scope.route({ method: ["GET", "POST", "OPTIONS"], url: "/oauth/*", ...hidden, handler: pass });
    done();
  });
}
