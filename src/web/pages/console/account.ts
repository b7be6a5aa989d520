import { iso } from "../../../config/clock.ts";
import type { UserTokenView } from "../../../domain/tokens/tokens.ts";
import { html, type SafeHtml } from "../../html.ts";
import { layout } from "../../layout.ts";
import { actionButton } from "./app.ts";

/** `/account`: the person's plan and user tokens (a new token's plaintext shown once, here). */
export function accountPage(options: { handle: string; email: string; plan: string; tokens: UserTokenView[]; minted: string | null }): SafeHtml {
  return layout({
    title: "Account",
    handle: options.handle,
    body: html`<p><a href="/">← Your apps</a></p>
<h1>Account</h1>
<dl class="facts"><dt>Handle</dt><dd>@${options.handle}</dd><dt>Email</dt><dd>${options.email}</dd><dt>Plan</dt><dd>${options.plan}</dd></dl>
<h2>Tokens</h2>
${
  options.minted !== null &&
  html`<div class="reveal" role="alert"><p>Your new token, shown this once: copy it now.</p><pre id="minted-token">${options.minted}</pre></div>`
}
${
  options.tokens.length === 0
    ? html`<p>No tokens.</p>`
    : html`<ul class="rows">${options.tokens.map(
        (t) => html`<li><div><span class="label">${t.name ?? "(unnamed)"}</span>
<span class="muted">${t.prefix}… · ${t.source} · last used ${t.lastUsedAt === null ? "never" : iso(t.lastUsedAt)} · expires ${t.expiresAt === null ? "never" : iso(t.expiresAt)}</span></div>
${actionButton(`/account/tokens/${t.id}/revoke`, `Revoke ${t.name ?? t.prefix}`, { secondary: true })}</li>`,
      )}</ul>`
}
<h2>New token</h2>
<form method="post" action="/account/tokens">
<label for="token-name">Name</label>
<input id="token-name" name="name" required maxlength="80">
<button class="button" type="submit">Create token</button>
</form>`,
  });
}
