import { randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";

// The MCP tool layer runs REST routes in-process (Fastify's inject) as its caller. This header,
// carrying a key drawn at start and never sent anywhere, tells a route that the request came
// from there: an op call it carries is an agent's (`x-svc-trigger: agent`, which may wait for a
// run slot). A request from outside cannot carry the key.
const HEADER = "x-brickyard-tool-call";
const KEY = Buffer.from(randomBytes(24).toString("base64url"));

// The person an OAuth access token acts for, carried to the routes a tool runs: the access token
// itself is bound to the MCP endpoint and is refused by every other route (DECISIONS §17).
const PRINCIPAL_HEADER = "x-brickyard-tool-principal";

/** The headers the tool layer adds to each request it injects; `oauth`, for a caller an access token let in. */
export function toolLayerHeaders(oauth?: { userId: string; grantId: string }): Record<string, string> {
  return { [HEADER]: KEY.toString(), ...(oauth === undefined ? {} : { [PRINCIPAL_HEADER]: `${oauth.userId} ${oauth.grantId}` }) };
}

// The routes MCP tools run (routes/mcp/tools.ts registers them at start): only there does the
// carried principal count, so no request, however its path was spelled, reaches another route
// (POST /api/token, say) as the access token's person.
const toolRoutes = new Set<string>();

/** Declares a route (method and Fastify path) that an MCP tool runs. */
export function allowToolRoute(method: string, url: string): void {
  toolRoutes.add(`${method} ${url}`);
}

/** The OAuth principal the tool layer carried on this request, or null (none, or not the tool layer's). */
export function toolLayerPrincipal(request: FastifyRequest): { kind: "user"; userId: string; via: "oauth"; grantId: string } | null {
  const value = request.headers[PRINCIPAL_HEADER];
  if (typeof value !== "string" || !fromToolLayer(request)) return null;
  if (!toolRoutes.has(`${request.method} ${request.routeOptions.url ?? ""}`)) return null;
  const [userId, grantId] = value.split(" ");
  return userId === undefined || grantId === undefined ? null : { kind: "user", userId, via: "oauth", grantId };
}

/** True when the tool layer made this request. */
export function fromToolLayer(request: FastifyRequest): boolean {
  const value = request.headers[HEADER];
  if (typeof value !== "string") return false;
  const given = Buffer.from(value);
  return given.length === KEY.length && timingSafeEqual(given, KEY);
}
