import type { DomainView } from "../../../domain/domains/index.ts";
import { html, type SafeHtml } from "../../html.ts";
import { actionButton } from "./app.ts";

const STATES: Record<DomainView["state"], string> = {
  pending: "pending: create the TXT record below, then verify",
  verified: "verified: served",
  failing: "failing: the record is missing; still served, removed after 72 hours without it",
};

/** The `domains` tab (DECISIONS §12): add, the record to create (with a copy button), verify now, state, remove. */
export function domainsTab(appId: string, domains: DomainView[], options: { ownerRights: boolean; planAllows: boolean; error: string | null }): SafeHtml {
  return html`<h2>Custom domains</h2>
<p>Serve this app at a hostname of yours. Point the name at this service (a CNAME, or the operator's address), prove it is yours with a TXT record, and the operator's proxy gets its certificate.</p>
${options.error !== null && html`<p class="error" role="alert">${options.error}</p>`}
${
  domains.length === 0
    ? html`<p id="no-domains">No custom domains.</p>`
    : html`<ul class="rows" id="domains">${domains.map(
        (d) => html`<li><div><span class="label">${d.hostname}</span> <span class="muted" data-state="${d.state}">${STATES[d.state]}</span>
${d.state === "pending" && html`<p>Create this TXT record at your DNS provider:</p>
<pre id="record-${d.id}">${d.verification.name} TXT "${d.verification.value}"</pre>
<button class="button secondary" type="button" data-copy="record-${d.id}">Copy the record</button>`}</div>
${options.ownerRights && actionButton(`/apps/${appId}/domains/${d.id}/verify`, `Verify ${d.hostname} now`, { secondary: true })}
${options.ownerRights && actionButton(`/apps/${appId}/domains/${d.id}/remove`, `Remove ${d.hostname}`, { secondary: true })}</li>`,
      )}</ul>`
}
${
  !options.ownerRights
    ? html`<p>Only those with the owner's rights add or remove domains.</p>`
    : !options.planAllows
      ? html`<p>Custom domains come with the pro plan and above.</p>`
      : html`<form method="post" action="/apps/${appId}/domains">
<label for="domain-hostname">Hostname</label>
<input id="domain-hostname" name="hostname" required maxlength="253" placeholder="todo.example.com" autocomplete="off" spellcheck="false">
<button class="button" type="submit">Add domain</button>
</form>`
}`;
}
