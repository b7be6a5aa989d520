import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { itBrowser, serverAndBrowser } from "./helpers/browser.ts";

describe("agents: mcpHint, agent.json and the MCP setup page", () => {
  const suite = serverAndBrowser();

  it("create responses carry mcpHint, valid against the OpenAPI document", async () => {
    const res = await suite.server.client.post("/app", { module: moduleSource(manifestOf("hinted")) });
    expect(res.body.mcpHint).toMatchObject({ setupUrl: `${suite.server.config.baseUrl}/mcp/setup` });
    expect(Object.keys(res.body.mcpHint.snippets).sort()).toEqual(["claude-code", "curl", "cursor", "vscode"]);
    expect(res.body.mcpHint.snippets["claude-code"]).toContain(`${suite.server.config.baseUrl}/mcp`);
    // No token ever goes into a snippet.
    expect(JSON.stringify(res.body.mcpHint)).not.toContain(res.body.token);
    const doc = (await suite.server.client.get("/.well-known/openapi.json")).body;
    const schema = doc.paths["/app"].post.responses["201"].content["application/json"].schema.properties.mcpHint;
    const ajv = new Ajv2020.default({ strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(schema);
    expect(validate(res.body.mcpHint), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ setupUrl: "not a uri", snippets: {} })).toBe(false);
  });

  it("agent.json: describe plus call URLs, auth, MCP URLs and a curl line per operation", async () => {
    const user = await makeUser(suite.server);
    const id = (await suite.server.client.post("/app", { module: moduleSource(manifestOf("described", ["list", "add"])) }, { token: user.token })).body.id;
    const res = await suite.server.client.get(`/app/${id}/agent.json`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, id, role: "owner", mcp: { app: `${suite.server.config.baseUrl}/app/${id}/mcp`, service: `${suite.server.config.baseUrl}/mcp` } });
    expect(res.body.operations.map((o: { id: string; callUrl: string }) => [o.id, o.callUrl])).toEqual([
      ["list", `${suite.server.config.baseUrl}/app/${id}/api/list`],
      ["add", `${suite.server.config.baseUrl}/app/${id}/api/add`],
    ]);
    expect(res.body.operations[0].curl).toContain(`-X POST ${suite.server.config.baseUrl}/app/${id}/api/list`);
    const stranger = await makeUser(suite.server);
    expect((await suite.server.client.get(`/app/${id}/agent.json`, { token: stranger.token })).status).toBe(403);
  });

  itBrowser("/mcp/setup shows each client's configuration with a copy button and a way to pair", { timeout: 60_000 }, async () => {
    const page = await suite.browser.newPage();
    await page.goto(`${suite.server.url}/mcp/setup`);
    await page.getByRole("heading", { name: "Connect an agent" }).waitFor();
    for (const name of ["Claude Code", "Cursor (.cursor/mcp.json)", "VS Code (.vscode/mcp.json)", "curl"]) {
      await page.getByRole("heading", { name }).waitFor();
      await page.getByRole("button", { name: `Copy ${name}` }).waitFor();
    }
    expect(await page.locator("#snippet-claude-code").textContent()).toContain(`claude mcp add --transport http brickyard ${suite.server.config.baseUrl}/mcp`);
    expect(await page.getByRole("link", { name: "Pair an agent with your account" }).getAttribute("href")).toBe("/pair");
    await suite.browser.screenshot(page, "mcp-setup");
    await page.close();
  });

  it("signed in, the setup page mints a token into the snippets, once, and the token works; signed out, it asks to sign in", async () => {
    const { server } = suite;
    const person = await makeUser(server);
    const origin = new URL(server.config.baseUrl).origin;
    const offered = await server.client.get("/mcp/setup", { cookie: person.cookie, headers: { accept: "text/html" } });
    expect(offered.text).toContain("Mint a token for these snippets");
    const minted = await server.client.request("POST", "/mcp/setup", undefined, { cookie: person.cookie, raw: "", headers: { origin, "content-type": "application/x-www-form-urlencoded", accept: "text/html" } });
    expect(minted.status).toBe(201);
    const token = /Bearer (svc_user_[A-Za-z0-9_-]+)/.exec(minted.text)?.[1] ?? "";
    expect(token).not.toBe("");
    expect(minted.text).not.toContain("&lt;token&gt;");
    expect((await server.client.get("/api/me", { token })).body).toMatchObject({ ok: true, user: { handle: person.handle } });
    // The next visit shows placeholders again: the token was in that one answer.
    expect((await server.client.get("/mcp/setup", { cookie: person.cookie, headers: { accept: "text/html" } })).text).not.toContain(token);
    const stranger = await server.client.request("POST", "/mcp/setup", undefined, { raw: "", headers: { origin, "content-type": "application/x-www-form-urlencoded", accept: "text/html" } });
    expect(stranger.status).toBe(401);
    const forged = await server.client.request("POST", "/mcp/setup", undefined, { cookie: person.cookie, raw: "", headers: { origin: "https://evil.example", "content-type": "application/x-www-form-urlencoded", accept: "application/json" } });
    expect(forged.status).toBe(403);
  });
});
