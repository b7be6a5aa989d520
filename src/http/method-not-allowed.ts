import type { FastifySchema } from "fastify";
import FindMyWay, { type HTTPMethod } from "find-my-way";
import { apiError } from "../errors/index.ts";
import type { App } from "./types.ts";

const METHODS: HTTPMethod[] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/**
 * Fastify answers an unknown method on a known path with 404. We keep a shadow router of every
 * registered path so the not-found handler can tell 405 (path exists, method does not) from 404.
 */
export function installNotFound(app: App): RouteList {
  const shadow = FindMyWay({ ignoreTrailingSlash: false });
  const routes: RouteList = [];
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      // Read when asked: hooks added later (the error envelope's responses) still change it.
      routes.push({ method, url: route.url, schema: () => route.schema });
      if (METHODS.includes(method as HTTPMethod) && shadow.find(method as HTTPMethod, route.url) === null) {
        shadow.on(method as HTTPMethod, route.url, () => undefined);
      }
    }
  });
  app.setNotFoundHandler((request) => {
    const path = request.url.split("?")[0] ?? "/";
    const allowed = METHODS.filter((m) => m !== request.method && shadow.find(m, path) !== null);
    if (allowed.length > 0) {
      throw apiError("method_not_allowed", `${request.method} is not allowed on ${path}`, {}, { headers: { Allow: allowed.join(", ") } });
    }
    throw apiError("not_found", `no route for ${request.method} ${path}`);
  });
  return routes;
}

/** Every method and path registered, in registration order (tests check the OpenAPI and the schemas against it). */
export type RouteList = { method: string; url: string; schema: () => FastifySchema | undefined }[];
