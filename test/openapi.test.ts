import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "./helpers/server.ts";

describe("OpenAPI description", () => {
  let server: TestServer;
  let doc: {
    openapi: string;
    info: { version: string };
    paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> };
  };
  beforeAll(async () => {
    server = await startServer();
    const res = await server.client.get("/.well-known/openapi.json");
    expect(res.status).toBe(200);
    doc = res.body;
  });
  afterAll(async () => server.close());

  it("is a valid OpenAPI 3.1.0 document at version 0.1.0", async () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("0.1.0");
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("lists every route the server registered, with the error envelope and security schemes", () => {
    // The authorization server's own endpoints (DECISIONS §17) answer in OAuth's error shape and
    // are described by its RFC 8414 metadata, not here.
    const oauth = (url: string) => url.startsWith("/oauth/*") || url === "/.well-known/oauth-authorization-server" || url === "/.well-known/openid-configuration";
    // Nor the 404 a custom domain's requests for anything but its app are routed to (custom-hosts.ts).
    const routes = server.routes.filter((r) => r.method !== "HEAD" && !oauth(r.url) && r.url !== "/__brickyard/not-on-this-host");
    expect(routes.length).toBeGreaterThan(5);
    for (const route of routes) {
      // A trailing wildcard (asset keys hold slashes) is the path parameter named `*`.
      const path = route.url.replace(/:([A-Za-z0-9_]+)/g, "{$1}").replace(/\*$/, "{*}");
      const operation = doc.paths[path]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${path}`).toBeDefined();
      expect(JSON.stringify(operation?.responses["4XX"] ?? operation?.responses["4xx"])).toContain("ErrorEnvelope");
    }
    expect(doc.components.schemas).toHaveProperty("ErrorEnvelope");
    expect(Object.keys(doc.components.securitySchemes)).toEqual(
      expect.arrayContaining(["userToken", "appToken", "renderToken", "queryRenderToken", "hookSecret", "session"]),
    );
  });

  it("documents exactly what the server enforces: the signup body refuses unknown properties", async () => {
    const signup = doc.paths["/api/auth/signup"]?.post as unknown as {
      requestBody: { content: { "application/json": { schema: { additionalProperties: boolean; required: string[] } } } };
    };
    const schema = signup.requestBody.content["application/json"].schema;
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(["email", "handle", "password"]);
    const res = await server.client.post("/api/auth/signup", { email: "a@b.co", handle: "abc", password: "long enough", extra: 1 });
    expect(res.status).toBe(400);
    expect(res.body.error.kind).toBe("invalid_request");
  });
});
