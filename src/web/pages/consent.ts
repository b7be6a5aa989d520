import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";

export interface ConsentView {
  uid: string;
  clientName: string;
  /** Where the client gets its answer: the redirect URI's host (or scheme, for an app's own). */
  redirectHost: string;
  /** The client's own URL when it sent one, or its metadata document URL. */
  clientUri: string | null;
  handle: string;
  /** The app of an /app/{id}/mcp resource, or null for /mcp (all of the person's apps). */
  appId: string | null;
}

/** The OAuth consent page (DECISIONS §17): who asks, where the answer goes, what it may do. */
export function consentPage(view: ConsentView): SafeHtml {
  const scope = view.appId === null ? "create, edit and call your apps, as you" : html`call and edit the app <span class="label">${view.appId}</span>, as you`;
  return layout({
    title: "Connect a client",
    handle: view.handle,
    body: html`<h1>Let <span id="client-name">${view.clientName}</span> act as you?</h1>
<p>It is asking to <strong>${scope}</strong> on Brickyard, through MCP, until you revoke it at <a href="/account">your account</a>.</p>
<dl>
<dt>Signed in as</dt><dd>${view.handle}</dd>
<dt>The answer goes to</dt><dd><span class="label" id="redirect-host">${view.redirectHost}</span></dd>
${view.clientUri !== null && html`<dt>Client</dt><dd><span class="label">${view.clientUri}</span></dd>`}
</dl>
<p>Only approve a client you just started connecting yourself.</p>
<form method="post" action="/oauth/consent/${view.uid}">
<button class="button" type="submit" name="decision" value="approve">Approve</button>
<button class="button secondary" type="submit" name="decision" value="deny">Deny</button>
</form>`,
  });
}
