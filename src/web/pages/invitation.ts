import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";
import { signInPage } from "./common.ts";

// The page an invitation mail links to (issue 15): sign in, see the invitation, accept it.

export function invitationSignInPage(returnTo: string): SafeHtml {
  return signInPage({ returnTo, intro: "Sign in to see the app that was shared with you." });
}

export function invitationPage(options: { handle: string; path: string; displayName: string; role: string; invitedBy: string }): SafeHtml {
  return layout({
    title: `Join ${options.displayName}`,
    handle: options.handle,
    body: html`<h1><span class="label">${options.displayName}</span></h1>
<p><span class="label">@${options.invitedBy}</span> invited you to use this app as <span class="label">${options.role}</span>.</p>
<form method="post" action="${options.path}">
<button class="button" type="submit">Accept and open the app</button>
</form>`,
  });
}
