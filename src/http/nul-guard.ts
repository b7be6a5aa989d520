import { apiError } from "../errors/index.ts";
import type { App } from "./types.ts";

/**
 * Refuses U+0000 in paths, queries and request bodies with 400 `invalid_request`. PostgreSQL
 * cannot store NUL in text and answers an error, which became a 500 on whatever route passed the
 * string on (login, sign-up, handles, token names, labels: found by the hostile share tests).
 * Op inputs and webhook payloads are exempt: they are the app's data, stored as JSON text, where
 * a NUL stays escaped.
 */
export function installNulGuard(app: App): void {
  app.addHook("preValidation", (request, _reply, done) => {
    if (EXEMPT.has(request.routeOptions.url ?? "")) return done();
    done(hasNul(request.params) || hasNul(request.query) || hasNul(request.body) ? apiError("invalid_request", "text may not contain the NUL character (U+0000)") : undefined);
  });
}

const EXEMPT = new Set(["/app/:id/api/:operation", "/api/v1/hooks/:webhookId"]);

function hasNul(value: unknown, depth = 0): boolean {
  if (typeof value === "string") return value.includes("\0");
  // Deeper than any body a route of ours declares; the schema refuses such bodies anyway.
  if (value === null || typeof value !== "object" || depth > 32) return false;
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) if (key.includes("\0") || hasNul(item, depth + 1)) return true;
  return false;
}
