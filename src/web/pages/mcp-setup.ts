import { CLIENT_NAMES, type McpHint } from "../../domain/agents/setup.ts";
import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";

// Copies a snippet when its button is pressed; the page's only script (it runs under a nonce).
export const COPY_SCRIPT = `for (const button of document.querySelectorAll("button[data-copy]")) {
  button.addEventListener("click", async () => {
    const text = document.getElementById(button.dataset.copy).textContent;
    try { await navigator.clipboard.writeText(text); button.textContent = "Copied"; } catch { button.textContent = "Select and copy"; }
  });
}`;

/** `/mcp/setup`: how to connect an agent, a snippet per client, and pairing for a token. */
export function mcpSetupPage(options: { hint: McpHint; mcpUrl: string; docsUrl: string; handle: string | null; nonce: string }): SafeHtml {
  const snippets = Object.entries(options.hint.snippets);
  return layout({
    title: "Connect an agent",
    handle: options.handle,
    script: { nonce: options.nonce, source: COPY_SCRIPT },
    body: html`<h1>Connect an agent</h1>
<p>Brickyard speaks MCP at <span class="label nowrap">${options.mcpUrl}</span>. An agent without a token can create apps
right away (each comes with its own token); to work on your apps it needs a user token, which pairing gives it.</p>
<p><a class="button" href="/pair">Pair an agent with your account</a></p>
${snippets.map(
  ([id, text]) => html`<section aria-labelledby="h-${id}">
<h2 id="h-${id}">${CLIENT_NAMES[id] ?? id}</h2>
<pre id="snippet-${id}">${text}</pre>
<button class="button" type="button" data-copy="snippet-${id}">Copy ${CLIENT_NAMES[id] ?? id}</button>
</section>`,
)}
<p>Replace <span class="label">&lt;token&gt;</span> with your token. How to write apps: <a href="${options.docsUrl}">${options.docsUrl}</a>.</p>`,
  });
}
