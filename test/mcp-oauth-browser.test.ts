import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { HOUR } from "../src/config/clock.ts";
import { counterModule } from "./fixtures/counter-app.ts";
import { describeBrowser, serverAndBrowser } from "./helpers/browser.ts";
import { MemoryOAuthClient, startRedirectCatcher } from "./helpers/oauth-client.ts";
import { startServer } from "./helpers/server.ts";
import { startTlsFixture, type TlsFixture } from "./helpers/tls-fixture.ts";

const PASSWORD = "a long enough password";
const COUNTER = counterModule("counter", "Counter");

let fixture: TlsFixture;
const textOf = (result: { content?: unknown }): unknown => JSON.parse((result.content as { text: string }[])[0]?.text ?? "null");
let catcher: Awaited<ReturnType<typeof startRedirectCatcher>>;
const metadataHost = "client.fixture.test";

beforeAll(async () => {
  catcher = await startRedirectCatcher();
  // The client ID metadata document of the second client, served over https from a "public" name.
  fixture = await startTlsFixture([metadataHost], (req, res) => {
    if (req.url !== "/client.json") return res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        client_id: `https://${metadataHost}:${fixture.port}/client.json`,
        client_name: "Metadata document client",
        redirect_uris: [catcher.url],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      }),
    );
  });
});
afterAll(async () => {
  await catcher?.close();
  await fixture?.close();
});

/** The MCP client SDK connects knowing only `{BASE_URL}/mcp`; the first try ends in UnauthorizedError with the person sent to sign in. */
async function connect(url: string, oauth: MemoryOAuthClient): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth });
  const client = new Client({ name: "oauth-e2e", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

/** The person signs in (when asked), reads the consent page and presses the button; the code comes back to the redirect URI. */
async function consent(page: Page, oauth: MemoryOAuthClient, handle: string, decision: "Approve" | "Deny", expectedClient: string): Promise<URLSearchParams> {
  const answer = catcher.next();
  await page.goto(oauth.authorizationUrl?.href ?? "");
  if (page.url().includes("/sign-in")) {
    await page.getByLabel("Email or handle").fill(handle);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
  }
  await page.getByRole("button", { name: "Approve" }).waitFor({ timeout: 10_000 }).catch(async (error: unknown) => {
    throw new Error(`no consent page at ${page.url()}: ${(await page.content()).slice(0, 2000)}`, { cause: error });
  });
  expect(await page.locator("#client-name").textContent()).toBe(expectedClient);
  expect(await page.locator("#redirect-host").textContent()).toBe(new URL(catcher.url).host);
  await page.getByRole("button", { name: decision }).click();
  return answer;
}

describeBrowser("MCP with OAuth: a real client from the URL alone to revocation", () => {
  const suite = serverAndBrowser(async () => {
    // The fixture must be up before the server learns where it listens.
    while (fixture === undefined) await new Promise((resolve) => setImmediate(resolve));
    return startServer({ egressTestOverrides: { hosts: { [`${metadataHost}:${fixture.port}`]: `127.0.0.1:${fixture.port}` }, caPem: fixture.caPem } });
  });

  it(
    "a dynamically registered client: discovery, registration, consent in Chromium, token, tools, create_app, call_operation, refresh after expiry, revoke in /account, 401",
    { timeout: 120_000 },
    async () => {
      const { server, browser } = suite;
      await server.ctx.users.create({ email: "ada@example.test", handle: "ada", password: PASSWORD });
      const oauth = new MemoryOAuthClient(catcher.url);
      await expect(connect(`${server.url}/mcp`, oauth)).rejects.toThrow(UnauthorizedError);
      expect(oauth.info?.client_id, "registered dynamically").toBeTruthy();
      expect(oauth.authorizationUrl?.searchParams.get("code_challenge_method")).toBe("S256");
      expect(oauth.authorizationUrl?.searchParams.get("resource")).toBe(`${server.url}/mcp`);

      const page = await browser.newPage();
      const answer = await consent(page, oauth, "ada", "Approve", "Test MCP client");
      expect(answer.get("code"), answer.toString()).toBeTruthy();
      expect(answer.get("iss")).toBe(server.url);
      const first = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { authProvider: oauth });
      await first.finishAuth(answer);
      expect(oauth.saved?.refresh_token).toBeTruthy();

      const { client } = await connect(`${server.url}/mcp`, oauth);
      const tools = await client.listTools();
      const create = tools.tools.find((tool) => tool.name === "create_app");
      expect(create?.annotations?.destructiveHint).toBe(true);
      expect(tools.tools.find((tool) => tool.name === "list_apps")?.annotations?.readOnlyHint).toBe(true);
      const created = await client.callTool({ name: "create_app", arguments: { module: COUNTER } });
      expect(created.isError ?? false, JSON.stringify(created)).toBe(false);
      const app = textOf(created) as { id: string };
      // Made as ada: claimed by her account, not anonymous.
      const owned = await server.ctx.apps.find(app.id);
      expect(owned?.ownerUserId).toBe((await server.ctx.users.byHandle("ada"))?.id);
      const called = await client.callTool({ name: "call_operation", arguments: { id: app.id, operation: "bump", input: {} } });
      expect(textOf(called)).toEqual({ ok: true, value: 1 });

      // An hour and a bit later the access token has expired: the client refreshes and goes on.
      const before = oauth.saved?.access_token;
      const refreshBefore = oauth.saved?.refresh_token;
      vi.useFakeTimers({ toFake: ["Date"] });
      try {
        vi.setSystemTime(Date.now() + HOUR + 60_000);
        const again = await client.callTool({ name: "call_operation", arguments: { id: app.id, operation: "bump", input: {} } });
        expect(textOf(again)).toEqual({ ok: true, value: 2 });
      } finally {
        vi.useRealTimers();
      }
      expect(oauth.saved?.access_token).not.toBe(before);
      expect(oauth.saved?.refresh_token, "the refresh token rotated").not.toBe(refreshBefore);

      // Ada revokes it in /account: its access token is refused at once, and so is its refresh token.
      await page.goto(`${server.url}/account`);
      expect(await page.locator("#clients").textContent()).toContain("Test MCP client");
      await page.getByRole("button", { name: "Revoke Test MCP client" }).click();
      await page.locator("#no-clients").waitFor();
      const direct = await fetch(`${server.url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${oauth.saved?.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(direct.status).toBe(401);
      expect(direct.headers.get("www-authenticate")).toContain('error="invalid_token"');
      const refreshed = await fetch(`${server.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: oauth.saved?.refresh_token ?? "", client_id: oauth.info?.client_id ?? "" }),
      });
      expect(refreshed.status).toBe(400);
      expect(((await refreshed.json()) as { error: string }).error).toBe("invalid_grant");
      await expect(client.listTools()).rejects.toThrow();
      await page.close();
    },
  );

  it("a client ID metadata document client: the server fetches its document under the egress rules, and the flow ends with tools", { timeout: 120_000 }, async () => {
    const { server, browser } = suite;
    await server.ctx.users.create({ email: "bea@example.test", handle: "bea", password: PASSWORD });
    const oauth = new MemoryOAuthClient(catcher.url, { clientMetadataUrl: `https://${metadataHost}:${fixture.port}/client.json` });
    await expect(connect(`${server.url}/mcp`, oauth)).rejects.toThrow(UnauthorizedError);
    expect(oauth.authorizationUrl?.searchParams.get("client_id")).toBe(`https://${metadataHost}:${fixture.port}/client.json`);
    const page = await browser.newPage();
    const answer = await consent(page, oauth, "bea", "Approve", "Metadata document client");
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { authProvider: oauth });
    await transport.finishAuth(answer);
    const { client } = await connect(`${server.url}/mcp`, oauth);
    const listed = await client.callTool({ name: "list_apps", arguments: {} });
    expect(listed.isError ?? false, JSON.stringify(listed)).toBe(false);
    await page.close();
  });
});
