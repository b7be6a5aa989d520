import { iso } from "../../config/clock.ts";
import type { AbuseReport, AppListing, AuditRow, UserListing } from "../../domain/operators/index.ts";
import { ABUSE_REASONS, DETAILS_MAX_BYTES, REASON_MAX_CHARS } from "../../domain/operators/index.ts";
import { html, type HtmlValue, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";

type AdminTab = "reports" | "apps" | "users" | "audit";
const TABS: readonly [AdminTab, string][] = [
  ["reports", "Reports"],
  ["apps", "Apps"],
  ["users", "Users"],
  ["audit", "Audit log"],
];

/** One page of /admin (DECISIONS §15): the operator's tabs and the tab's body. */
function adminPage(handle: string, tab: AdminTab | null, title: string, body: HtmlValue): SafeHtml {
  return layout({
    title: `${title} · Admin`,
    handle,
    body: html`<p><a href="/">← Your apps</a></p>
<h1>${title}</h1>
<nav aria-label="Admin sections"><ul class="tabs">${TABS.map(([id, name]) => html`<li><a href="/admin/${id}"${id === tab && html` aria-current="page"`}>${name}</a></li>`)}</ul></nav>
${body}`,
  });
}

function searchForm(action: string, q: string, label: string): SafeHtml {
  return html`<form method="get" action="${action}" role="search">
<label for="q">${label}</label>
<input id="q" name="q" value="${q}" maxlength="200" autocomplete="off" spellcheck="false">
<button class="button secondary" type="submit">Search</button>
</form>`;
}

function suspensionText(s: { of?: "app" | "owner"; at: number; reason: string } | null): SafeHtml | string {
  if (s === null) return "";
  return html` · <strong>suspended${s.of === "owner" ? " (owner)" : ""}</strong> ${iso(s.at)}: ${s.reason}`;
}

export function reportsPage(handle: string, reports: readonly AbuseReport[]): SafeHtml {
  return adminPage(handle, "reports", "Abuse reports", reportList(reports));
}

function reportList(reports: readonly AbuseReport[]): SafeHtml {
  if (reports.length === 0) return html`<p>No reports.</p>`;
  return html`<ul class="rows" id="reports">${reports.map(
    (r) => html`<li><div><span class="label"><a href="/admin/apps/${r.appId}">${r.appId}</a></span>
<span class="muted">${iso(r.createdAt)} · ${ABUSE_REASONS[r.reason]} · from ${r.reporterIp}</span>
${r.details !== "" && html`<pre>${r.details}</pre>`}</div></li>`,
  )}</ul>`;
}

export function appsPage(handle: string, q: string, apps: readonly (AppListing & { quarantinedForMs: number })[]): SafeHtml {
  return adminPage(
    handle,
    "apps",
    "Apps",
    html`${searchForm("/admin/apps", q, "Id, name, owner's handle, or anonymous")}
${apps.length === 0 ? html`<p>No apps found.</p>` : html`<ul class="rows" id="apps">${apps.map((a) => html`<li><div><span class="label"><a href="/admin/apps/${a.id}">${a.name}</a></span>${appFacts(a)}</div></li>`)}</ul>`}`,
  );
}

function appFacts(a: AppListing & { quarantinedForMs: number }): SafeHtml {
  return html`<span class="muted">${a.ownerHandle === null ? "anonymous" : `@${a.ownerHandle}`} · created ${iso(a.createdAt)}${a.claimedAt !== null && ` · claimed ${iso(a.claimedAt)}`} · ${a.storedBytes} bytes stored · ${a.lastDay.calls} calls, ${a.lastDay.failures} failed in the last day${a.quarantinedForMs > 0 && ` · quarantined ${Math.ceil(a.quarantinedForMs / 1000)} s more here`}${suspensionText(a.suspension)}</span>`;
}

export function appDetailPage(handle: string, app: AppListing & { quarantinedForMs: number }, reports: readonly AbuseReport[], audit: readonly AuditRow[]): SafeHtml {
  const own = app.suspension?.of === "app";
  return adminPage(
    handle,
    "apps",
    app.name,
    html`<p>${appFacts(app)}</p>
<p><a href="/app/${app.id}">Open its page</a> · <code>${app.id}</code> · manifest <code>${app.manifestId}</code></p>
${
  own
    ? html`<form method="post" action="/admin/apps/${app.id}/unsuspend"><button class="button" type="submit">Unsuspend</button></form>`
    : html`<form method="post" action="/admin/apps/${app.id}/suspend">
<label for="reason">Reason (the owner sees it)</label>
<textarea id="reason" name="reason" rows="2" maxlength="${REASON_MAX_CHARS}" required></textarea>
<button class="button" type="submit">Suspend</button>
</form>`
}
<form method="post" action="/admin/apps/${app.id}/delete">
<label for="confirm">Type the app's id to delete it and everything it stores</label>
<input id="confirm" name="confirm" required maxlength="100" autocomplete="off" spellcheck="false">
<button class="button danger" type="submit">Delete</button>
</form>
<h2>Reports</h2>
${reportList(reports)}
<h2>Audit</h2>
${auditList(audit)}`,
  );
}

export function usersPage(handle: string, q: string, users: readonly UserListing[]): SafeHtml {
  return adminPage(
    handle,
    "users",
    "Users",
    html`${searchForm("/admin/users", q, "Handle or email")}
${
  users.length === 0
    ? html`<p>No accounts found.</p>`
    : html`<ul class="rows" id="users">${users.map(
        (u) => html`<li><div><span class="label">@${u.handle}</span>
<span class="muted">${u.email} · ${u.kind} · ${u.plan}${u.role === "operator" && " · operator"} · ${u.apps} apps · created ${iso(u.createdAt)}${suspensionText(u.suspension)}</span></div>
${
  u.suspension === null
    ? html`<form method="post" action="/admin/users/${u.handle}/suspend"><label for="reason-${u.handle}">Reason</label><input id="reason-${u.handle}" name="reason" required maxlength="${REASON_MAX_CHARS}"><button class="button secondary" type="submit">Suspend @${u.handle}</button></form>`
    : html`<form method="post" action="/admin/users/${u.handle}/unsuspend"><button class="button secondary" type="submit">Unsuspend @${u.handle}</button></form>`
}</li>`,
      )}</ul>`
}`,
  );
}

export interface AuditFilterForm {
  actor: string;
  action: string;
  target: string;
  since: string;
  until: string;
}

/** `/admin/audit` with its filters, or a person's own rows at `/account/audit`. */
export function auditPage(handle: string, rows: readonly AuditRow[], filter: AuditFilterForm | null): SafeHtml {
  const body = html`${
    filter !== null &&
    html`<form method="get" action="/admin/audit" role="search" class="filters">
<label for="actor">Actor's handle</label><input id="actor" name="actor" value="${filter.actor}" maxlength="100">
<label for="action">Action</label><input id="action" name="action" value="${filter.action}" maxlength="40" placeholder="app.suspend">
<label for="target">Target id</label><input id="target" name="target" value="${filter.target}" maxlength="100">
<label for="since">From (ISO date)</label><input id="since" name="since" value="${filter.since}" maxlength="40">
<label for="until">Until (ISO date)</label><input id="until" name="until" value="${filter.until}" maxlength="40">
<button class="button secondary" type="submit">Filter</button>
</form>`
  }
${auditList(rows)}`;
  if (filter !== null) return adminPage(handle, "audit", "Audit log", body);
  return layout({ title: "Your audit log", handle, body: html`<p><a href="/account">← Account</a></p><h1>Your audit log</h1><p class="muted">What you did, and what operators did to your account and apps, newest first.</p>${body}` });
}

function auditList(rows: readonly AuditRow[]): SafeHtml {
  if (rows.length === 0) return html`<p>No entries.</p>`;
  return html`<ul class="rows" id="audit">${rows.map(
    (r) => html`<li><div><span class="label">${r.action}</span>
<span class="muted">${iso(r.at)} · ${actorText(r.actor)} · ${r.target.kind} ${r.target.id}${r.ip !== null && ` · from ${r.ip}`}</span>
${Object.keys(r.detail).length > 0 && html`<code>${JSON.stringify(r.detail)}</code>`}</div></li>`,
  )}</ul>`;
}

function actorText(actor: AuditRow["actor"]): string {
  if (actor.kind === "other") return "someone else (an operator, or a person you shared with)";
  if (actor.kind === "user") return actor.handle === null ? `user ${actor.id ?? ""}` : `@${actor.handle}`;
  if (actor.kind === "app") return `app token of ${actor.id ?? ""}`;
  return actor.kind;
}

/** The "Report" link's form (outside the app's frame): a reason from the list, details, sent to us. */
export function reportFormPage(app: { id: string; name: string }, sent: boolean): SafeHtml {
  return layout({
    title: `Report ${app.name}`,
    body: sent
      ? html`<h1>Thank you</h1><p role="status">Your report about ${app.name} reached the operators of this service.</p>`
      : html`<h1>Report ${app.name}</h1>
<p>Tell the operators of this service what is wrong with this app. The app's owner does not see your report.</p>
<form method="post" action="/app/${app.id}/report">
<fieldset><legend>What is it?</legend>
${Object.entries(ABUSE_REASONS).map(([value, text], i) => html`<div><input type="radio" id="reason-${value}" name="reason" value="${value}"${i === 0 && html` required`}><label for="reason-${value}">${text}</label></div>`)}
</fieldset>
<label for="details">Details (optional)</label>
<textarea id="details" name="details" rows="4" maxlength="${DETAILS_MAX_BYTES}"></textarea>
<button class="button" type="submit">Send report</button>
</form>`,
  });
}
