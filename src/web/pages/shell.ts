import { createHash } from "node:crypto";
import type { FastifyReply } from "fastify";
import { html, unsafeRaw } from "../html.ts";
import { browserScript, scriptJson } from "../sdk/files.ts";

export interface ShellOptions {
  /** The origin the page is served from (an app's custom domain, or the service's). */
  base: string;
  /** The service's own address, for the watermark. */
  serviceUrl?: string;
  appId: string;
  title: string;
  /** The frame's src, carrying the query render token. */
  frameSrc: string;
  /** The same token, for the shell's own feedback form. */
  renderToken: string;
  watermark: boolean;
  /** The open-in-chat / copy-prompt text. */
  prompt: string;
  nonce: string;
}

/** Where "Open in chat" goes: a new chat with the prompt filled in. */
export const CHAT_URL = "https://claude.ai/new?q=";

/**
 * The app shell (DECISIONS §5): title, icon, actions, the sandboxed frame and the watermark.
 * The frame has no `allow-same-origin`, so the app's code runs in an opaque origin and can reach
 * neither this page's DOM nor this origin's cookies.
 */
export function shellPage(options: ShellOptions): string {
  const icon = `${options.base}/app/${options.appId}/icon.svg`;
  const script = browserScript("shell.js").replace(
    "__SVC_SHELL__",
    () => scriptJson({ feedbackUrl: `${options.base}/app/${options.appId}/feedback`, token: options.renderToken, prompt: options.prompt }),
  );
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title}</title>
<link rel="icon" href="${icon}">
<style>${unsafeRaw(SHELL_CSS)}</style>
</head>
<body>
<header class="bar">
<img src="${icon}" alt="" width="28" height="28">
<h1>${options.title}</h1>
<nav class="actions">
<button type="button" id="copy-prompt">Copy prompt</button>
<a id="open-chat" href="${CHAT_URL + encodeURIComponent(options.prompt)}" target="_blank" rel="noopener noreferrer">Open in chat</a>
<details id="feedback"><summary>Feedback</summary>
<form id="feedback-form"><label for="feedback-text">Tell the owner what you think</label>
<textarea id="feedback-text" name="text" rows="4" maxlength="16000" required></textarea>
<button type="submit">Send feedback</button><p id="feedback-status" role="status"></p></form>
</details>
<a id="report-app" href="${options.base}/app/${options.appId}/report" target="_blank" rel="noopener">Report</a>
</nav>
</header>
<iframe id="app-frame" title="${options.title}" src="${options.frameSrc}" sandbox="allow-scripts allow-forms allow-popups" referrerpolicy="no-referrer"></iframe>
${options.watermark && html`<a class="watermark" href="${options.serviceUrl ?? options.base}/" target="_blank" rel="noopener">Built with Brickyard</a>`}
<script nonce="${options.nonce}">${unsafeRaw(script)}</script>
</body>
</html>
`.value;
}

const SHELL_CSS = `
:root { color-scheme: light dark; --fg: #1b1b1f; --muted: #5b5b66; --bg: #f6f5f2; --line: #d9d6cf; --accent: #b4461f; }
@media (prefers-color-scheme: dark) { :root { --fg: #ecebe8; --muted: #a9a8b3; --bg: #17171a; --line: #3a3a40; --accent: #f08a5d; } }
* { box-sizing: border-box; }
html, body { height: 100%; }
body { margin: 0; display: flex; flex-direction: column; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
.bar { display: flex; align-items: center; gap: .75rem; padding: .5rem 1rem; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
.bar img { border-radius: 6px; }
.bar h1 { font-size: 1.1rem; margin: 0; flex: 1; }
.actions { display: flex; gap: .5rem; align-items: center; position: relative; }
.actions button, .actions a, .actions summary { font: inherit; font-size: .9rem; padding: .35rem .7rem; border: 1px solid var(--line); border-radius: 6px; background: transparent; color: var(--fg); text-decoration: none; cursor: pointer; list-style: none; }
#feedback form { position: absolute; right: 0; top: 2.5rem; z-index: 2; width: 20rem; padding: .75rem; background: var(--bg); border: 1px solid var(--line); border-radius: 8px; }
#feedback label { display: block; font-weight: 600; margin: 0 0 .25rem; }
#feedback textarea { width: 100%; font: inherit; margin: 0 0 .5rem; }
iframe { flex: 1; width: 100%; border: 0; background: #fff; }
.watermark { position: fixed; right: .75rem; bottom: .75rem; font-size: .75rem; padding: .2rem .5rem; border-radius: 999px; background: var(--bg); color: var(--muted); border: 1px solid var(--line); text-decoration: none; }
`;

const SHELL_CSS_HASH = `sha256-${createHash("sha256").update(SHELL_CSS).digest("base64")}`;

/** Sends the shell with its CSP: our stylesheet, the nonce'd script, frames from this origin only. */
export function sendShell(reply: FastifyReply, page: string, nonce: string): FastifyReply {
  return reply
    .status(200)
    .headers({
      "Content-Security-Policy": `default-src 'none'; style-src '${SHELL_CSS_HASH}'; img-src 'self' data:; frame-src 'self'; script-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
      "X-Frame-Options": "DENY",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "same-origin",
      "Cache-Control": "no-store",
    })
    .type("text/html; charset=utf-8")
    .send(page);
}
