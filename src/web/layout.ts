import { randomBytes } from "node:crypto";
import type { FastifyReply } from "fastify";
import { html, unsafeRaw, type HtmlValue, type SafeHtml } from "./html.ts";
import { PAGE_CSS, PAGE_CSS_HASH } from "./styles.ts";

export interface PageOptions {
  title: string;
  /** The signed-in person's handle, shown in the header. */
  handle?: string | null;
  body: HtmlValue;
  /** A page's own inline script; it runs only with this response's nonce (see sendPage). */
  script?: { nonce: string; source: string };
  /**
   * Where the browser goes on its own once the page has loaded (a meta refresh): a navigation of
   * the page's own, so not held to form-action as a redirect after a form's submission would be.
   */
  goTo?: string;
}

/** The shared document around every server-rendered page. */
export function layout(options: PageOptions): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Brickyard</title>
${options.goTo !== undefined && html`<meta http-equiv="refresh" content="0; url=${options.goTo}">`}
<style>${unsafeRaw(PAGE_CSS)}</style>
</head>
<body>
<header><span class="brand">Brickyard</span>${options.handle != null && html`<span class="who">Signed in as @${options.handle}</span>`}</header>
<main>
${options.body}
</main>
${options.script !== undefined && html`<script nonce="${options.script.nonce}">${unsafeRaw(options.script.source)}</script>`}
</body>
</html>
`;
}

// No script runs on these pages; only our own stylesheet and forms to ourselves. Framing is
// refused so an approval button cannot be overlaid by another site (clickjacking), and codes in
// the URL never leave in a Referer to another site. Not `no-referrer`: under it Chromium sends
// `Origin: null` on our own form posts, which the Origin rule must then refuse.
const PAGE_HEADERS = {
  "Content-Security-Policy": `default-src 'none'; style-src '${PAGE_CSS_HASH}'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
  "Cache-Control": "no-store",
};

/**
 * Sends a page with the headers above. A page that needs a script passes the nonce it rendered
 * the script with; that script, and nothing else, may run and talk to this origin.
 */
export function sendPage(reply: FastifyReply, page: SafeHtml, status = 200, options: { scriptNonce?: string; formTargets?: string[] } = {}): FastifyReply {
  let policy = PAGE_HEADERS["Content-Security-Policy"];
  // A form whose answer redirects elsewhere (OAuth consent, to the client) names where: browsers
  // hold each redirect after a submission to form-action.
  if (options.formTargets !== undefined && options.formTargets.length > 0) policy = policy.replace("form-action 'self'", `form-action 'self' ${options.formTargets.join(" ")}`);
  if (options.scriptNonce !== undefined) policy = `${policy}; script-src 'nonce-${options.scriptNonce}'; connect-src 'self'`;
  return reply
    .status(status)
    .headers({ ...PAGE_HEADERS, "Content-Security-Policy": policy })
    .type("text/html; charset=utf-8")
    .send(page.value);
}

export function newNonce(): string {
  return randomBytes(16).toString("base64");
}
