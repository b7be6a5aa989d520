import type { Services } from "../../services.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";

export default function openapi(app: App, _ctx: Services): void {
  // The document is fixed once the routes are: serialized at its first request, not at every one
  // (~200 KiB of JSON, public and unmetered).
  let document: string | null = null;
  app.get(
    "/.well-known/openapi.json",
    { schema: { tags: ["system"], summary: "This document: OpenAPI 3.1.0, generated from the route schemas", security: security.none } },
    (_request, reply) => {
      document ??= JSON.stringify(app.swagger());
      return reply.type("application/json; charset=utf-8").send(document);
    },
  );
}
