import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";
import { signInForm } from "./common.ts";

export interface ClaimPageOptions {
  appId: string;
  displayName: string;
  manifestId: string;
  revision: number;
  expiresAt: string | null;
  /** The signed-in person, or null. */
  handle: string | null;
  /** Whether this browser holds the app's claim cookie (it presented the app token). */
  holdsToken: boolean;
  nonce: string;
}

// Runs once with the token from the URL fragment (never sent to the server in a URL): hands it
// to the server as an HttpOnly claim cookie, drops it from the address bar, and reloads so the
// page can offer the claim with no token in sight.
const FRAGMENT_SCRIPT = `(() => {
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  if (!token) return;
  history.replaceState(null, "", location.pathname);
  fetch(location.pathname + "-session", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ token }) })
    .then((res) => { if (res.ok) location.reload(); else document.getElementById("claim-error").hidden = false; });
})();`;

/** `GET /app/{id}/claim`: what will move, and one button to take it. */
export function claimPage(o: ClaimPageOptions): SafeHtml {
  const path = `/app/${o.appId}/claim`;
  let action: SafeHtml;
  if (!o.holdsToken) {
    action = html`<p>Open the claim link your agent gave you (it ends in <code>#token=…</code>) in this browser to claim this app.</p>`;
  } else if (o.handle === null) {
    action = html`<p>Sign in to claim this app under your account.</p>${signInForm({ returnTo: path })}`;
  } else {
    action = html`<form method="post" action="${path}/confirm">
<button class="button" type="submit">Claim “${o.displayName}” as @${o.handle}</button>
</form>`;
  }
  return layout({
    title: `Claim ${o.displayName}`,
    handle: o.handle,
    script: { nonce: o.nonce, source: FRAGMENT_SCRIPT },
    body: html`<h1>Claim this app</h1>
<p class="app-summary"><img src="/app/${o.appId}/icon.svg" alt="" width="48" height="48"> <strong>${o.displayName}</strong> <span class="muted">${o.manifestId} · revision ${o.revision}</span></p>
<p>Claiming moves this app, its data and its future revisions to your account and keeps it past its 7-day limit${o.expiresAt === null ? "" : html` (unclaimed, it is removed on ${o.expiresAt})`}. The agent's per-app token stops working; an agent that asked to pair gets a token of yours.</p>
<p id="claim-error" class="error" role="alert" hidden>That claim link is not valid for this app.</p>
${action}`,
  });
}
