import { nestingError } from "../lib/json-depth.ts";
import type { App } from "./types.ts";

export { nestingError };

/** Errors the JSON body parser gave: the body could not be read at all (MCP answers them in JSON-RPC's shape). */
const parseErrors = new WeakSet<object>();

export function isBodyParseError(error: unknown): boolean {
  return typeof error === "object" && error !== null && parseErrors.has(error);
}

/**
 * Every JSON body goes through Fastify's own parser (which refuses `__proto__` and `constructor`
 * poisoning), but only once its nesting is known to be bounded: deeper bodies are refused 400
 * before any parse, so nothing downstream recurses through them. Routes with parsers of their
 * own call nestingError() themselves.
 */
export function installJsonBodies(app: App): void {
  const standard = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const refused = nestingError(body);
    if (refused !== null) {
      parseErrors.add(refused);
      done(refused, undefined);
      return;
    }
    void standard(request, typeof body === "string" ? body : body.toString("utf8"), (error, value) => {
      if (error !== null) parseErrors.add(error);
      done(error, value);
    });
  });
}
