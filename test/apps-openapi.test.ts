import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "./helpers/server.ts";

describe("apps: OpenAPI document stays valid with the app routes", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => server.close());

  it("validates as OpenAPI 3.1 and lists every app route", async () => {
    const doc = await server.client.get("/.well-known/openapi.json");
    const result = await new Validator().validate(doc.body);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    const methods = (path: string) => Object.keys(doc.body.paths[path] ?? {});
    expect(methods("/app")).toEqual(expect.arrayContaining(["get", "post"]));
    expect(methods("/app/{id}")).toEqual(expect.arrayContaining(["get", "put", "delete"]));
    expect(methods("/app/{id}/source")).toEqual(expect.arrayContaining(["get", "patch"]));
    for (const path of ["/app/{id}/claim", "/app/{id}/describe", "/app/{id}/icon.svg", "/app/{id}/icon", "/@{handle}/{manifestId}"]) {
      expect(methods(path).length, path).toBeGreaterThan(0);
    }
  });
});
