import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeUser, moduleSource, type FixtureUser } from "../helpers/apps.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

interface Operation {
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  parameters?: { name: string; in: string; schema?: Schema }[];
}
interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
}

/** 20,000 arrays inside one another: what made `POST /mcp` answer 500 (a stack overflow serializing it). */
const DEEP_ARRAYS = `${"[".repeat(20_000)}${"]".repeat(20_000)}`;
const DEEP_OBJECTS = `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`;
const HUGE = "x".repeat(300 * 1024);
const NUL = "a\u0000b";

/** Bodies for a route whose JSON body has these properties: each one hostile in its own way. */
function bodiesFor(schema: Schema | undefined): { what: string; raw: string }[] {
  const properties = Object.keys(schema?.properties ?? {});
  const each = (value: unknown) => JSON.stringify(Object.fromEntries((properties.length > 0 ? properties : ["x"]).map((p) => [p, value])));
  const wrongTypes = (properties.length > 0 ? properties : ["x"]).map((p) => {
    const type = schema?.properties?.[p]?.type;
    return type === "string" ? 12345 : type === "object" ? "not an object" : type === "array" ? { not: "an array" } : ["wrong"];
  });
  return [
    { what: "20,000 nested arrays", raw: DEEP_ARRAYS },
    { what: "5,000 nested objects", raw: DEEP_OBJECTS },
    { what: "deep nesting inside a field", raw: each(JSON.parse(`${"[".repeat(100)}${"]".repeat(100)}`)) },
    { what: "a 300 KiB string in every field", raw: each(HUGE) },
    { what: "wrong types", raw: JSON.stringify(Object.fromEntries((properties.length > 0 ? properties : ["x"]).map((p, i) => [p, wrongTypes[i]]))) },
    { what: "NUL bytes in every field", raw: each(NUL) },
    { what: "a bare number", raw: "12345" },
    { what: "not JSON", raw: "{\"a\": " },
  ];
}

/**
 * Issue 42: no input makes any route answer 5xx. Every route of the OpenAPI document is sent
 * deep nesting (arrays and objects, at the top and inside fields), huge strings, wrong types,
 * NUL bytes and broken JSON, with no credential, a user token and an app token, its path
 * parameters naming a real app where they name an app. DELETEs go last, so that the app they
 * delete was there for every other route.
 */
describe("hostile: every route fuzzed with hostile bodies, parameters and queries", () => {
  let server: TestServer;
  let user: FixtureUser;
  let appId: string;
  let appToken: string;
  let paths: Record<string, Record<string, Operation>>;

  beforeAll(async () => {
    server = await startServer();
    user = await makeUser(server);
    const module = moduleSource({ id: "fuzzed", capabilities: { imports: ["svc:storage/kv@1.0"] }, routes: { echo: { access: "read", input: { type: "object" } } } });
    const created = await server.client.post("/app", { module });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id as string;
    appToken = created.body.token as string;
    paths = (await server.client.get("/.well-known/openapi.json")).body.paths as typeof paths;
  });
  afterAll(async () => server.close());

  function pathFor(template: string, value: (name: string) => string): string {
    return template.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(value(name)).replace(/%2F/g, "/"));
  }

  const realParam = (name: string) => (/^(id|appId)$/.test(name) ? appId : name === "*" ? "some/key.txt" : name.endsWith("Id") ? "00000000-0000-4000-8000-000000000000" : "value");

  it("answers every one of them below 500", async () => {
    const routes = Object.entries(paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method: method.toUpperCase(), op })));
    routes.sort((a, b) => Number(a.method === "DELETE") - Number(b.method === "DELETE"));
    expect(routes.length).toBeGreaterThan(150);
    const failures: string[] = [];
    let requests = 0;
    const send = async (method: string, url: string, raw: string | undefined, token: string | undefined, label: string) => {
      requests += 1;
      const headers: Record<string, string> = { origin: server.url };
      if (raw !== undefined) headers["content-type"] = "application/json";
      if (token !== undefined) headers.authorization = `Bearer ${token}`;
      const res = await fetch(server.url + url, { method, headers, ...(raw === undefined ? {} : { body: raw }), redirect: "manual" });
      // Event streams never end: the status is the answer; the body is read only to report a 5xx.
      if (res.status >= 500) failures.push(`${res.status} ${method} ${url.slice(0, 120)} (${label}): ${(await res.text()).slice(0, 200)}`);
      else await res.body?.cancel();
    };
    for (const { path, method, op } of routes) {
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      const query = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
      for (const token of [undefined, user.token, appToken]) {
        const url = pathFor(path, realParam);
        if (method !== "GET" && method !== "HEAD") {
          for (const body of bodiesFor(schema)) await send(method, url, body.raw, token, body.what);
        }
        // Parameters and queries: NUL bytes, a huge value, and a value of the wrong kind.
        await send(method, pathFor(path, (name) => (/^(id|appId)$/.test(name) ? `${appId}\u0000` : NUL)), undefined, token, "NUL in path parameters");
        await send(method, pathFor(path, () => "y".repeat(2000)), undefined, token, "2,000-character path parameters");
        const q = (value: string) => `${url}?${(query.length > 0 ? query : ["x"]).map((name) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join("&")}`;
        await send(method, q(NUL), undefined, token, "NUL in the query");
        await send(method, q("z".repeat(100_000)), undefined, token, "a 100 KB query value");
        await send(method, q("-1e999"), undefined, token, "a number out of range in the query");
      }
    }
    console.warn(`hostile | fuzz: ${routes.length} routes, ${requests} requests, ${failures.length} answered 5xx`);
    expect(failures).toEqual([]);
  }, 300_000);

  it("refuses deep nesting with 400 invalid_request on JSON routes, and in JSON-RPC's shape on MCP", async () => {
    const post = (path: string, raw: string, token?: string) =>
      fetch(server.url + path, { method: "POST", headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }, body: raw });
    const create = await post("/app", DEEP_ARRAYS);
    expect(create.status).toBe(400);
    expect(((await create.json()) as { error: { kind: string } }).error.kind).toBe("invalid_request");
    const call = await post(`/app/${appId}/api/echo`, `{"v":${"[".repeat(65)}${"]".repeat(65)}}`, appToken);
    expect(call.status).toBe(400);
    expect(((await call.json()) as { error: { kind: string; details: { reason: string } } }).error).toMatchObject({ kind: "invalid_request", details: { reason: "too_deep" } });
    // Exactly at the bound is fine.
    const fine = await post(`/app/${appId}/api/echo`, `{"v":${"[".repeat(63)}${"]".repeat(63)}}`, appToken);
    expect(fine.status).toBe(200);
    // An app's own answer nested that deep is its output's fault: 502, not a crash serializing it.
    const deepApp = await server.client.post("/app", {
      module: `export const manifest = { id: "deep", routes: { deep: { access: "read" } } };
export default { async fetch() { return new Response('{"ok":true,"value":' + "[".repeat(10000) + "]".repeat(10000) + "}", { headers: { "content-type": "application/json" } }); } };`,
    });
    expect(deepApp.status, JSON.stringify(deepApp.body)).toBe(201);
    const deep = await server.client.post(`/app/${deepApp.body.id as string}/api/deep`, {}, { token: deepApp.body.token as string });
    expect({ status: deep.status, kind: deep.body.error.kind }).toEqual({ status: 502, kind: "invalid_output" });
    for (const path of ["/mcp", `/app/${appId}/mcp`]) {
      const mcp = await post(path, DEEP_ARRAYS, user.token);
      expect(mcp.status, path).toBe(400);
      expect(await mcp.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700, data: { ok: false, error: { kind: "invalid_request" } } } });
    }
  });
});
