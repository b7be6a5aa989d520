import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "./helpers/server.ts";

describe("OpenAPI description of routines and webhooks", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => server.close());

  it("stays a valid OpenAPI 3.1.0 document and describes every routine and webhook route", async () => {
    const doc = (await server.client.get("/.well-known/openapi.json")).body;
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    const expected: [string, string][] = [
      ["post", "/api/v1/apps/{appId}/routines"],
      ["get", "/api/v1/apps/{appId}/routines"],
      ["get", "/api/v1/routines"],
      ["get", "/api/v1/routines/{id}"],
      ["patch", "/api/v1/routines/{id}"],
      ["delete", "/api/v1/routines/{id}"],
      ["post", "/api/v1/routines/{id}/run"],
      ["post", "/api/v1/apps/{appId}/webhooks"],
      ["get", "/api/v1/apps/{appId}/webhooks"],
      ["get", "/api/v1/webhooks"],
      ["get", "/api/v1/webhooks/{id}"],
      ["patch", "/api/v1/webhooks/{id}"],
      ["delete", "/api/v1/webhooks/{id}"],
      ["get", "/api/v1/webhooks/{id}/deliveries"],
      ["post", "/api/v1/hooks/{webhookId}"],
    ];
    for (const [method, path] of expected) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    expect(doc.paths["/api/v1/hooks/{webhookId}"].post.security).toEqual([{ hookSecret: [] }]);
  });
});
