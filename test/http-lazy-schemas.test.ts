import Fastify, { type FastifySchema } from "fastify";
import SerializerSelector from "@fastify/fast-json-stringify-compiler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lazySerializers, lazyValidators } from "../src/http/lazy-schemas.ts";
import { validatorCompiler } from "../src/http/validation.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

// Route schemas compile on first use, not at boot (src/http/lazy-schemas.ts). Boot no longer
// proves that they compile, so this does, for every route; and the lazy stand-ins must answer
// exactly as the compiled functions would.

const PARTS = ["body", "querystring", "params", "headers"] as const;

/** The compilers a server builds once and compiles every route's schemas with. */
function serverCompilers(external: Record<string, unknown>) {
  return { validators: validatorCompiler(), serializers: SerializerSelector()(external, {}) };
}

/** Compiles every schema of `schema` as the server would; throws what a compile throws, naming the place. */
function compileAll(where: string, schema: FastifySchema, { validators, serializers }: ReturnType<typeof serverCompilers>): number {
  let compiled = 0;
  for (const httpPart of PARTS) {
    const part = schema[httpPart];
    if (part === undefined || part === null) continue;
    try {
      validators({ schema: part, method: "", url: where, httpPart });
    } catch (error) {
      throw new Error(`${where} ${httpPart}: ${String(error)}`, { cause: error });
    }
    compiled++;
  }
  for (const [httpStatus, response] of Object.entries((schema.response ?? {}) as Record<string, unknown>)) {
    try {
      serializers({ schema: response, method: "", url: where, httpStatus });
    } catch (error) {
      throw new Error(`${where} response ${httpStatus}: ${String(error)}`, { cause: error });
    }
    compiled++;
  }
  return compiled;
}

describe("route schemas", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => server.close());

  it("every route's validators and response serializers compile", () => {
    const compilers = serverCompilers(server.http.getSchemas());
    expect(server.routes.length).toBeGreaterThan(100);
    for (const route of server.routes) {
      const where = `${route.method} ${route.url}`;
      // Every route has at least its 4xx and 5xx envelopes.
      expect(compileAll(where, route.schema() ?? {}, compilers), where).toBeGreaterThanOrEqual(2);
    }
  });

  it("the check above fails on a schema that cannot compile", () => {
    const compilers = serverCompilers(server.http.getSchemas());
    expect(() => compileAll("GET /broken", { response: { 200: { $ref: "Missing#" } } }, compilers)).toThrow(/GET \/broken response 200/);
    expect(() => compileAll("POST /broken", { body: { type: "object", properties: { a: { type: "no-such-type" } } } }, compilers)).toThrow(/POST \/broken body/);
  });
});

describe("lazy compilers", () => {
  /** A bare Fastify with our compilers, made lazy, and one route answering what it was sent. */
  async function echoServer(schema: FastifySchema) {
    const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: lazySerializers() } } });
    app.setValidatorCompiler(lazyValidators(validatorCompiler()));
    app.post("/echo", { schema }, (request) => ({ body: request.body, query: request.query }));
    await app.ready();
    return app;
  }

  it("a server whose schemas cannot compile still starts: each is compiled by the first request that needs it", async () => {
    for (const broken of [{ response: { 200: { $ref: "Missing#" } } }, { body: { type: "object", properties: { a: { type: "no-such-type" } } } }]) {
      const app = await echoServer(broken);
      const first = await app.inject({ method: "POST", url: "/echo", payload: {} });
      expect(first.statusCode, JSON.stringify(broken)).toBe(500);
      await app.close();
    }
  });

  it("validates, coerces and reports errors as the compiled validator does", async () => {
    const schema: FastifySchema = {
      body: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
      querystring: { type: "object", properties: { tags: { type: "array", items: { type: "integer" } }, limit: { type: "integer", default: 10 } } },
      response: { 200: { type: "object", properties: { body: { type: "object", properties: { n: { type: "integer" } } }, query: { type: "object", additionalProperties: true } } } },
    };
    const app = await echoServer(schema);
    const ok = await app.inject({ method: "POST", url: "/echo?tags=7", payload: { n: 1 } });
    expect(ok.statusCode).toBe(200);
    // The query coerces (a lone value into an array of integers) and takes its default.
    expect(ok.json()).toEqual({ body: { n: 1 }, query: { tags: [7], limit: 10 } });

    const refused = await app.inject({ method: "POST", url: "/echo", payload: { n: "1" } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toBe("body/n must be integer");
    const unknown = await app.inject({ method: "POST", url: "/echo", payload: { n: 1, extra: true } });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().message).toBe("body must NOT have additional properties");
    await app.close();
  });
});
