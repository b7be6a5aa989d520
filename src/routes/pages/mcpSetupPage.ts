import { randomBytes } from "node:crypto";
import type { Services } from "../../services.ts";
import { mcpHint } from "../../domain/agents/setup.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { mcpSetupPage } from "../../web/pages/mcp-setup.ts";
import { viewerOf } from "./viewer.ts";

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
}
