import { randomBytes } from "node:crypto";
import type { Services } from "../../services.ts";
import { mcpHint, withToken } from "../../domain/agents/setup.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { mcpSetupPage } from "../../web/pages/mcp-setup.ts";
import { signInPage } from "../../web/pages/common.ts";
import { viewerAudit, viewerOf } from "./viewer.ts";

/** `GET /mcp/setup`: the page `mcpHint.setupUrl` points at (DECISIONS §11). */
export default function mcpSetupRoutes(app: App, ctx: Services): void {
  app.get("/mcp/setup", { schema: { tags: ["pages"], summary: "How to connect an agent over MCP (HTML)" } }, async (request, reply) => {
    const viewer = await viewerOf(ctx, request);
    const nonce = randomBytes(16).toString("base64");
    const page = mcpSetupPage({
      hint: mcpHint(ctx.config.baseUrl),
      mcpUrl: `${ctx.config.baseUrl}/mcp`,
      docsUrl: `${ctx.config.baseUrl}/docs/apps`,
      handle: viewer?.handle ?? null,
      nonce,
    });
    return sendPage(reply, page, 200, { scriptNonce: nonce });
  });
  // For clients without OAuth: a signed-in person mints a user token here, into the snippets.
  app.post("/mcp/setup", { schema: { tags: ["pages"], summary: "Mint a user token and show the MCP snippets with it, once (HTML)" } }, async (request, reply) => {
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) return sendPage(reply, signInPage({ returnTo: "/mcp/setup", intro: "Sign in to mint a token for your agent." }), 401);
    const issued = await ctx.tokens.mintUserToken(viewer.userId, { name: "MCP setup", days: SETUP_TOKEN_DAYS }, viewerAudit(request, viewer));
    const nonce = randomBytes(16).toString("base64");
    const page = mcpSetupPage({ hint: withToken(mcpHint(ctx.config.baseUrl), issued.token), mcpUrl: `${ctx.config.baseUrl}/mcp`, docsUrl: `${ctx.config.baseUrl}/docs/apps`, handle: viewer.handle, nonce, minted: true });
    return sendPage(reply, page, 201, { scriptNonce: nonce });
  });
}

/** As a token minted at /account. */
const SETUP_TOKEN_DAYS = 7;
