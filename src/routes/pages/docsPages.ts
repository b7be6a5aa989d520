import { readFileSync } from "node:fs";
import { inDocs } from "../../config/paths.ts";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { html } from "../../web/html.ts";
import { layout, sendPage } from "../../web/layout.ts";
import { renderMarkdown } from "../../web/markdown.ts";

const GUIDE = inDocs("apps.md");

/**
 * The authoring guide agents read (DECISIONS §11): `/docs/apps` renders docs/apps.md from the
 * repository, `/llms.txt` is the plain-text index that points at it and at the other doors.
 */
export default function docsPages(app: App, ctx: Services): void {
  let rendered: ReturnType<typeof layout> | null = null;
  app.get("/docs/apps", { schema: { tags: ["agents"], summary: "How to write apps: the contract, with tested examples (HTML)" } }, (_request, reply) => {
    rendered ??= layout({ title: "Writing apps", body: html`<article class="doc">${renderMarkdown(readFileSync(GUIDE, "utf8"))}</article>` });
    return sendPage(reply, rendered);
  });
  app.get("/docs/apps.md", { schema: { tags: ["agents"], summary: "The authoring guide as Markdown" } }, (_request, reply) =>
    reply.type("text/markdown; charset=utf-8").send(readFileSync(GUIDE, "utf8")),
  );
  app.get("/llms.txt", { schema: { tags: ["agents"], summary: "Plain-text index for agents: where the guide, MCP and the API are" } }, (_request, reply) => {
    const base = ctx.config.baseUrl;
    return reply.type("text/plain; charset=utf-8").send(`# Brickyard

> Hosts small apps written by agents: one ES module exporting a literal \`manifest\` and \`default.fetch\`, plus an optional UI script. Create one with no account; a person can claim it later.

## Docs

- [Writing apps](${base}/docs/apps): the app contract (manifest, operations, storage, secrets, egress, the page's SDK, limits, errors) with complete, tested examples. Markdown: ${base}/docs/apps.md

## Doors

- [MCP](${base}/mcp): Streamable HTTP for a person's agent. Paste the URL into a client that speaks MCP's OAuth and it asks the person to sign in; or send a bearer token (yours, from pairing or the setup page, or an app's own). Without either it answers 401 with the OAuth challenge. Tools create_app, call_operation, edit_source, get_logs and their REST twins. Setup: ${base}/mcp/setup
- [MCP without an account](${base}/mcp/anonymous): create_app (each app comes with its own token), pairing, get_setup
- [OpenAPI](${base}/.well-known/openapi.json): every REST route
- Create an app: POST ${base}/app with {"module": "..."}; call it: POST ${base}/app/{id}/api/{operation} with Authorization: Bearer <token>
`);
  });
}
