import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";
import { signInPage } from "./common.ts";

// The page a team invitation mail links to: sign in, see the invitation, accept it (issue 15).

export function teamInvitationSignInPage(returnTo: string): SafeHtml {
  return signInPage({ returnTo, intro: "Sign in with the account at the address this invitation was sent to." });
}

export function teamInvitationPage(o: { handle: string; path: string; teamName: string; slug: string; role: string }): SafeHtml {
  return layout({
    title: `Join ${o.teamName}`,
    handle: o.handle,
    body: html`<h1><span class="label">${o.teamName}</span></h1>
<p>You are invited to join the team <span class="label">@${o.slug}</span> as <span class="label">${o.role}</span>. Its members edit and run the team's apps; its admins also share, move and delete them.</p>
<form method="post" action="${o.path}">
<button class="button" type="submit">Join the team</button>
</form>`,
  });
}

export function teamJoinedPage(o: { handle: string; teamName: string; slug: string; apps: { name: string; url: string }[] }): SafeHtml {
  return layout({
    title: `You joined ${o.teamName}`,
    handle: o.handle,
    body: html`<h1>You joined <span class="label">${o.teamName}</span></h1>
<p>The team's apps live under <span class="label">/@${o.slug}</span>.</p>
${o.apps.length === 0 ? html`<p>The team has no apps yet.</p>` : html`<ul>${o.apps.map((a) => html`<li><a href="${a.url}">${a.name}</a></li>`)}</ul>`}`,
  });
}
