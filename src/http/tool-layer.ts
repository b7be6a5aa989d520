import { randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";

// The MCP tool layer runs REST routes in-process (Fastify's inject) as its caller. This header,
// carrying a key drawn at start and never sent anywhere, tells a route that the request came
// from there: an op call it carries is an agent's (`x-svc-trigger: agent`, which may wait for a
// run slot). A request from outside cannot carry the key.
const HEADER = "x-brickyard-tool-call";
const KEY = Buffer.from(randomBytes(24).toString("base64url"));

/** The header the tool layer adds to each request it injects. */
export function toolLayerHeaders(): Record<string, string> {
  return { [HEADER]: KEY.toString() };
}

/** True when the tool layer made this request. */
export function fromToolLayer(request: FastifyRequest): boolean {
  const value = request.headers[HEADER];
  if (typeof value !== "string") return false;
  const given = Buffer.from(value);
  return given.length === KEY.length && timingSafeEqual(given, KEY);
}
