import type { AppContext } from "../../context.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";

export default function openapi(app: App, _ctx: AppContext): void {
  app.get(
    "/.well-known/openapi.json",
    { schema: { tags: ["system"], summary: "This document: OpenAPI 3.1.0, generated from the route schemas", security: security.none } },
    () => Promise.resolve(app.swagger()),
  );
}
