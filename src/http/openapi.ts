import swagger from "@fastify/swagger";
import type { App } from "./types.ts";

export const API_VERSION = "0.1.0";

/**
 * OpenAPI 3.1 generated from the route schemas that validate requests, so the document cannot
 * drift from what the server enforces. Served at /.well-known/openapi.json by a system route.
 */
export async function installOpenApi(app: App, baseUrl: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Brickyard App Runtime Service",
        version: API_VERSION,
        description: "Hosts small apps written by AI agents: create, run, store, share. Errors use the envelope {ok: false, error: {kind, …}}.",
      },
      servers: [{ url: baseUrl }],
      components: {
        securitySchemes: {
          userToken: { type: "http", scheme: "bearer", description: "svc_user_… personal or paired user token" },
          appToken: { type: "http", scheme: "bearer", description: "svc_app_… per-app token from an anonymous create" },
          renderToken: { type: "http", scheme: "bearer", description: "svc_render_… token minted when an app page renders" },
          queryRenderToken: { type: "apiKey", in: "query", name: "t", description: "query render token for app loads" },
          hookSecret: { type: "http", scheme: "bearer", description: "svc_hook_… webhook secret (or ?key=)" },
          metricsToken: { type: "http", scheme: "bearer", description: "METRICS_TOKEN, for GET /metrics" },
          session: { type: "apiKey", in: "cookie", name: "svc_session", description: "browser session (__Host-svc_session over https)" },
          claimCookie: { type: "apiKey", in: "cookie", name: "svc_claim_{id}", description: "the app token held by the browser that opened the claim link (assets only)" },
        },
      },
    },
    refResolver: {
      // Keep shared schemas under their own names in components.schemas.
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`),
    },
  });
}
