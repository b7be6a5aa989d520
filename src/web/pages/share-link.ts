import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";
import { signInPage } from "./common.ts";

// The page a share link opens (DECISIONS §9): sign in, see what the link gives, take it.

export function shareSignInPage(returnTo: string): SafeHtml {
  return signInPage({ returnTo, intro: "Sign in to open the app that was shared with you." });
}

export function shareConfirmPage(options: { handle: string; path: string; displayName: string; role: string; customDomain?: string | null }): SafeHtml {
  return layout({
    title: `Open ${options.displayName}?`,
    handle: options.handle,
    body: html`<h1>Open <span class="label">${options.displayName}</span>?</h1>
<p>This link lets you use the app as <span class="label">${options.role}</span>. It appears among your apps until its owner revokes the link.</p>
${options.customDomain !== undefined && options.customDomain !== null && html`<p id="custom-domain">Its own address: <span class="label">https://${options.customDomain}</span></p>`}
<form method="post" action="${options.path}">
<button class="button" type="submit">Open the app</button>
</form>`,
  });
}
