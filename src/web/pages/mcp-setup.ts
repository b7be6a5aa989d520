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
export function mcpSetupPage(options: { hint: McpHint; mcpUrl: string; docsUrl: string; handle: string | null; nonce: string; minted?: boolean }): SafeHtml {
  const snippets = Object.entries(options.hint.snippets);
  return layout({
    title: "Connect an agent",
    handle: options.handle,
    script: { nonce: options.nonce, source: COPY_SCRIPT },
    body: html`<h1>Connect an agent</h1>
<p>Brickyard speaks MCP at <span class="label nowrap">${options.mcpUrl}</span>. Paste that URL into your client: if it
speaks MCP's OAuth (Claude, ChatGPT, Cursor, VS Code do), it asks you to sign in here and approve it, and that is all.
You can revoke it at <a href="/account">your account</a>.</p>
<p>For a client without OAuth, use a snippet below with a token: pairing gives your agent one, or mint one here.
An agent with no account creates apps at <span class="label nowrap">${options.mcpUrl}/anonymous</span> (each comes with its own token).</p>
<p><a class="button" href="/pair">Pair an agent with your account</a></p>
${snippets.map(
  ([id, text]) => html`<section aria-labelledby="h-${id}">
<h2 id="h-${id}">${CLIENT_NAMES[id] ?? id}</h2>
<pre id="snippet-${id}">${text}</pre>
<button class="button" type="button" data-copy="snippet-${id}">Copy ${CLIENT_NAMES[id] ?? id}</button>
</section>`,
)}
${
  options.minted === true
    ? html`<p class="notice" role="status" id="minted-note">These snippets hold a new token of yours, shown this once: copy the one you need now. It lasts 7 days; revoke it at <a href="/account">your account</a>.</p>`
    : options.handle !== null
      ? html`<form method="post" action="/mcp/setup"><p>No token yet? Mint one here and the snippets will hold it.</p><button class="button secondary" type="submit">Mint a token for these snippets</button></form>`
      : html`<p>Replace <span class="label">&lt;token&gt;</span> with your token (sign in to mint one here).</p>`
}
<p>How to write apps: <a href="${options.docsUrl}">${options.docsUrl}</a>.</p>`,
  });
}
