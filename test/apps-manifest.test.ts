import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { createAnonymousApp, expectError, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const FETCH = "export default { async fetch() { return Response.json({ ok: true, value: null }); } };";

describeEachDialect("apps: manifest extraction and validation", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());
  // Each test makes many anonymous creates: more than the 30 a minute one address may make.
  beforeEach(() => server.ctx.limiter.reset());

  const create = (module: string, ui?: string) => server.client.post("/app", ui === undefined ? { module } : { module, ui });

  it("reads the manifest without running the module", async () => {
    // Top-level code that would throw (or worse) if evaluated; the create must still succeed.
    const module = `throw new Error("must not run");\nprocess.exit(1);\n${moduleSource(manifestOf("inert"))}`;
    const res = await create(module);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.manifestId).toBe("inert");
  });

  it("accepts the literal forms: const + export list, negative numbers, plain templates, quoted keys, a named default", async () => {
    const module = `
      const manifest = { "id": \`lit-forms\`, version: '2', routes: { sum: { input: { type: "object", properties: { n: { type: "number", minimum: -10 } } } } } };
      async function handle() { return Response.json({ ok: true, value: 1 }); }
      const worker = { fetch: handle };
      export { manifest, worker as default };`;
    const res = await create(module);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ manifestId: "lit-forms", version: "2", capabilities: { exports: ["sum"] } });

    const classDefault = `export const manifest = { id: "klass" };\nexport default class { async fetch() { return new Response("x"); } }`;
    expect((await create(classDefault)).status).toBe(201);
  });

  it("refuses non-literal manifests with invalid_manifest_schema naming the path", async () => {
    const cases: [string, string][] = [
      [`const n = "x"; export const manifest = { id: n };`, "manifest.id"],
      [`export const manifest = { id: "a", routes: { go: { title: "T" + "x" } } };`, "manifest.routes.go.title"],
      [`export const manifest = { id: "a", capabilities: { imports: [...["svc:storage/kv@1.0"]] } };`, "manifest.capabilities.imports"],
      [`export const manifest = { id: "a", version: \`v\${1}\` };`, "manifest.version"],
      [`export const manifest = { id: "a", routes: { go() {} } };`, "manifest.routes.go"],
      [`const id = "a"; export const manifest = { id };`, "manifest.id"],
      [`export const manifest = { id: "a", ["x"]: 1 };`, "manifest"],
      [`export const manifest = { id: "a", icon: { emoji: "🙂", bg: undefined } };`, "manifest.icon.bg"],
      [`export const manifest = { id: "a", capabilities: { origins: [/x/] } };`, "manifest.capabilities.origins[0]"],
      [`export const manifest = makeManifest();`, "manifest"],
      [`export let manifest = { id: "a" };`, "manifest"],
      // A repeated key: JavaScript keeps the last, a rewrite of the first (a copy's new id) changed nothing.
      [`export const manifest = { id: "a", id: "b" };`, "manifest.id"],
      [`export const manifest = { id: "a", routes: { go: {}, "go": {} } };`, "manifest.routes.go"],
    ];
    for (const [head, path] of cases) {
      const error = expectError(await create(`${head}\n${FETCH}`), 400, "invalid_manifest_schema");
      expect(error.message, head).toContain(path);
      expect((error.details as { path: string }).path, head).toBe(path);
    }
  });

  it("refuses modules without a manifest export or a default fetch with invalid_module", async () => {
    expectError(await create("export const manifest = {"), 400, "invalid_module");
    expectError(await create(FETCH), 400, "invalid_module");
    expectError(await create(`export const manifest = { id: "a" };`), 400, "invalid_module");
    expectError(await create(`export const manifest = { id: "a" };\nexport default { run() {} };`), 400, "invalid_module");
    expectError(await create(`export const manifest = { id: "a" };\nexport default { fetch: 42 };`), 400, "invalid_module");
    // A classic script (no ES module syntax allowed) still parses as a module; CommonJS does not export.
    expectError(await create(`module.exports = { manifest: { id: "a" }, fetch() {} };`), 400, "invalid_module");
  });

  it("validates id, version, displayName and the capabilities", async () => {
    const bad = async (manifest: Record<string, unknown>, kind: string, path: string) => {
      const error = expectError(await create(`export const manifest = ${JSON.stringify(manifest)};\n${FETCH}`), 400, kind);
      expect(error.message, JSON.stringify(manifest)).toContain(path);
    };
    await bad({}, "invalid_manifest_schema", "manifest.id");
    await bad({ id: "Not_Kebab" }, "invalid_manifest_schema", "manifest.id");
    await bad({ id: "trailing-" }, "invalid_manifest_schema", "manifest.id");
    await bad({ id: "a".repeat(65) }, "invalid_manifest_schema", "manifest.id");
    await bad({ id: 7 }, "invalid_manifest_schema", "manifest.id");
    await bad({ id: "a", version: 2 }, "invalid_manifest_schema", "manifest.version");
    await bad({ id: "a", displayName: ["x"] }, "invalid_manifest_schema", "manifest.displayName");
    await bad({ id: "a", capabilities: [] }, "invalid_manifest_schema", "manifest.capabilities");
    await bad({ id: "a", capabilities: { imports: ["svc:storage/kv@2.0"] } }, "invalid_manifest_schema", "manifest.capabilities.imports[0]");
    await bad({ id: "a", capabilities: { imports: "svc:storage/kv@1.0" } }, "invalid_manifest_schema", "manifest.capabilities.imports");
    await bad({ id: "a", capabilities: { network: true } }, "invalid_manifest_schema", "manifest.capabilities.network");
    for (const origin of ["http://api.example.com", "https://api.example.com/", "https://*.example.com", "https://api.example.com/v1", "api.example.com"]) {
      await bad({ id: "a", capabilities: { origins: [origin] } }, "invalid_manifest_schema", "manifest.capabilities.origins[0]");
    }
    await bad({ id: "a", description: "d".repeat(501) }, "description_too_long", "manifest.description");
    const ok = await create(`export const manifest = ${JSON.stringify({ id: "caps", capabilities: { imports: ["svc:storage/kv@1.0", "svc:storage/blob@1.0", "svc:logging/emit@1.0"], origins: ["https://api.example.com:8443"] } })};\n${FETCH}`);
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  });

  it("requires exports to equal the route keys (invalid_manifest_exports)", async () => {
    const withExports = (exports: unknown) => moduleSource(manifestOf("exp", ["a", "b"], { capabilities: { exports } }));
    expectError(await create(withExports(["a"])), 400, "invalid_manifest_exports");
    expectError(await create(withExports(["a", "b", "c"])), 400, "invalid_manifest_exports");
    expectError(await create(withExports(["a", "b", "b"])), 400, "invalid_manifest_exports");
    expect((await create(withExports(["b", "a"]))).status).toBe(201);
    expectError(await create(moduleSource({ id: "exp", capabilities: { exports: ["a"] } })), 400, "invalid_manifest_exports");
  });

  it("validates routes: shape, operation ids, access, and JSON Schemas compiled as draft 2020-12", async () => {
    const withRoutes = (routes: unknown) => moduleSource({ id: "r", routes });
    expectError(await create(withRoutes(["a"])), 400, "invalid_routes_shape");
    expectError(await create(withRoutes("a")), 400, "invalid_routes_shape");
    expectError(await create(withRoutes({ "1bad": {} })), 400, "invalid_routes_shape");
    expectError(await create(withRoutes({ "has space": {} })), 400, "invalid_routes_shape");
    expectError(await create(withRoutes({ ["a".repeat(65)]: {} })), 400, "invalid_routes_shape");
    expectError(await create(withRoutes({ go: "fetch" })), 400, "invalid_routes_shape");
    expectError(await create(withRoutes({ go: { access: "admin" } })), 400, "invalid_routes_shape");
    expectError(await create(withRoutes({ go: { method: "POST" } })), 400, "invalid_routes_shape");
    expectError(await create(withRoutes({ go: { title: 5 } })), 400, "invalid_routes_shape");
    const schema = expectError(await create(withRoutes({ go: { input: { type: "strnig" } } })), 400, "invalid_route_schema");
    expect(schema.message).toContain("manifest.routes.go.input");
    expectError(await create(withRoutes({ go: { output: { properties: { a: { minimum: "x" } } } } })), 400, "invalid_route_schema");
    expectError(await create(withRoutes({ go: { input: { $ref: "#/$defs/missing" } } })), 400, "invalid_route_schema");
    expectError(await create(withRoutes({ go: { input: 42 } })), 400, "invalid_route_schema");

    const good = await create(
      withRoutes({
        list: { access: "read", output: { type: "array", prefixItems: [{ type: "string" }] } },
        add: { title: "Add", description: "adds", input: { type: "object", required: ["text"], properties: { text: { type: "string", format: "email" } }, additionalProperties: false } },
        "do_thing-2": {},
      }),
    );
    expect(good.status, JSON.stringify(good.body)).toBe(201);
    const described = await server.client.get(`/app/${good.body.id}/describe`);
    expect(described.status).toBe(200);
    expect(described.body.operations).toEqual([
      { id: "list", title: null, description: null, access: "read", input: null, output: { type: "array", prefixItems: [{ type: "string" }] } },
      {
        id: "add",
        title: "Add",
        description: "adds",
        access: "write",
        input: { type: "object", required: ["text"], properties: { text: { type: "string", format: "email" } }, additionalProperties: false },
        output: null,
      },
      { id: "do_thing-2", title: null, description: null, access: "write", input: null, output: null },
    ]);
  });

  it("normalises icons: first grapheme kept; bad emoji, bg or extra properties give null + a warning, never a 400", async () => {
    const withIcon = (icon: unknown) => create(moduleSource({ id: "iconic", icon }));
    const multi = await withIcon({ emoji: "👨‍👩‍👧🚀x", bg: "#ABCDEF" });
    expect(multi.status).toBe(201);
    expect(multi.body.icon).toEqual({ emoji: "👨‍👩‍👧", bg: "#ABCDEF" });
    expect(multi.body.warnings).toBeUndefined();
    for (const bg of ["#abc", "#aabbcc", "#aabbcc80"]) expect((await withIcon({ emoji: "🇫🇷", bg })).body.icon).toEqual({ emoji: "🇫🇷", bg });

    const invalid = [
      { emoji: "🙂", bg: "red" },
      { emoji: "🙂", bg: "rgb(1,2,3)" },
      { emoji: "🙂", bg: "hsl(1,2%,3%)" },
      { emoji: "🙂", bg: "url(https://x.test/a.png)" },
      { emoji: "🙂", bg: "#abcd" },
      { emoji: "A", bg: "#fff" },
      { emoji: "", bg: "#fff" },
      { emoji: "🙂" },
      { emoji: "🙂", bg: "#fff", image: "https://x.test/a.png" },
      "🙂",
    ];
    for (const icon of invalid) {
      const res = await withIcon(icon);
      expect(res.status, JSON.stringify(icon)).toBe(201);
      expect(res.body.icon).toBeNull();
      expect(res.body.warnings, JSON.stringify(icon)).toHaveLength(1);
      expect(res.body.warnings[0]).toContain("icon");
    }
  });

  it("warns when the UI calls an undeclared operation, and still writes", async () => {
    const ui = `svc.call("hello", {}); window.svc.call('missing'); svc . call(\`other\`, {x: 1}); svc.call(dynamicName);`;
    const res = await create(moduleSource(manifestOf("ui-check")), ui);
    expect(res.status).toBe(201);
    expect(res.body.warnings).toHaveLength(2);
    expect(res.body.warnings.join("\n")).toContain('"missing"');
    expect(res.body.warnings.join("\n")).toContain('"other"');
    const clean = await create(moduleSource(manifestOf("ui-clean")), `svc.call("hello")`);
    expect(clean.body.warnings).toBeUndefined();
  });

  it("serves the composed icon SVG: the brick by default, the manifest's emoji and colour otherwise", async () => {
    const plain = await createAnonymousApp(server, "brick");
    const svg = await server.client.get(`/app/${plain.id}/icon.svg`);
    expect(svg.status).toBe(200);
    expect(svg.headers.get("content-type")).toContain("image/svg+xml");
    expect(svg.text).toContain("🧱");
    expect(svg.text).toContain("<rect");
    expect(svg.text).toContain('rx="28"');

    const fancy = await create(moduleSource({ id: "fancy", icon: { emoji: "🚀", bg: "#123456" } }));
    const fancySvg = await server.client.get(`/app/${fancy.body.id}/icon.svg`);
    expect(fancySvg.text).toContain("🚀");
    expect(fancySvg.text).toContain("#123456");

    expectError(await server.client.get(`/app/not-a-uuid/icon.svg`), 400, "invalid_id");
    expectError(await server.client.get(`/app/00000000-0000-4000-8000-000000000000/icon.svg`), 404, "app_not_found");
  });
});
