import { iso } from "../../../config/clock.ts";
import type { PlanLimits } from "../../../config/plans.ts";
import type { ConnectedClient } from "../../../domain/oauth/index.ts";
import type { UserTokenView } from "../../../domain/tokens/tokens.ts";
import { html, type SafeHtml } from "../../html.ts";
import { layout } from "../../layout.ts";
import { actionButton } from "./app.ts";

/** What the person's plan allows and how much of it their own apps use. */
export interface PlanUsage {
  limits: PlanLimits;
  routines: number;
  webhooks: number;
}

/** `/account`: the person's plan, user tokens (a new token's plaintext shown once, here) and connected OAuth clients. */
export function accountPage(options: {
  handle: string;
  email: string;
  plan: string;
  usage: PlanUsage;
  teams: { slug: string; name: string; role: string }[];
  tokens: UserTokenView[];
  clients: ConnectedClient[];
  minted: string | null;
}): SafeHtml {
  const { limits } = options.usage;
  return layout({
    title: "Account",
    handle: options.handle,
    body: html`<p><a href="/">← Your apps</a></p>
<h1>Account</h1>
<dl class="facts"><dt>Handle</dt><dd>@${options.handle}</dd><dt>Email</dt><dd>${options.email}</dd><dt>Plan</dt><dd>${options.plan}</dd></dl>
<h2>Plan limits</h2>
<dl class="facts">
<dt>Routines</dt><dd>${options.usage.routines} of ${limits.routines_per_owner} (${limits.routines_per_app} per app)</dd>
<dt>Webhooks</dt><dd>${options.usage.webhooks} of ${limits.webhooks_per_owner} (${limits.webhooks_per_app} per app)</dd>
<dt>Versions kept</dt><dd>${limits.version_history} per app</dd>
<dt>Runs</dt><dd>${limits.concurrent_runs} at once, ${limits.runs_per_minute} a minute per app</dd>
</dl>
<h2>Teams</h2>
${
  options.teams.length === 0
    ? html`<p>You are in no team.</p>`
    : html`<ul class="rows">${options.teams.map((t) => html`<li><div><span class="label">${t.name}</span><span class="muted">@${t.slug} · ${t.role}</span></div></li>`)}</ul>`
}
<form method="post" action="/account/teams">
<label for="team-slug">New team's handle</label>
<input id="team-slug" name="slug" required maxlength="39" autocomplete="off" spellcheck="false">
<button class="button secondary" type="submit">Create team</button>
</form>
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
<h2>Connected clients</h2>
<p>MCP clients you let act as you when they signed in. Revoking one ends its access at once.</p>
${
  options.clients.length === 0
    ? html`<p id="no-clients">No connected clients.</p>`
    : html`<ul class="rows" id="clients">${options.clients.map(
        (c) => html`<li><div><span class="label">${c.name}</span>
<span class="muted">connected ${iso(c.createdAt)} · last used ${c.lastUsedAt === null ? "never" : iso(c.lastUsedAt)}</span></div>
${actionButton(`/account/clients/${c.grantId}/revoke`, `Revoke ${c.name}`, { secondary: true })}</li>`,
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
