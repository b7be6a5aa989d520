import type { DiagEntry } from "../../../domain/diagnostics/diag-ring.ts";
import type { LogLineView } from "../../../domain/logs/index.ts";
import type { ActivityEvent } from "../../../domain/diagnostics/activity.ts";
import type { RoutineView } from "../../../domain/routines/views.ts";
import type { DeliveryView } from "../../../domain/webhooks/deliveries.ts";
import type { WebhookView } from "../../../domain/webhooks/views.ts";
import { html, type SafeHtml } from "../../html.ts";
import { actionButton } from "./app.ts";

// The bodies of an app's console tabs. Every value shown is escaped by `html`; no secret value
// is ever rendered, only names, and a webhook's secret only in the one-time reveal.

export function secretsTab(appId: string, names: string[]): SafeHtml {
  return html`<h2>Secrets</h2>
<p>The app reads each as <span class="label">env.NAME</span>. Values are never shown again once set.</p>
${names.length === 0 ? html`<p>No secrets yet.</p>` : html`<ul class="rows">${names.map((name) => html`<li><span class="label">${name}</span>${actionButton(`/apps/${appId}/secrets/${encodeURIComponent(name)}/delete`, `Delete ${name}`, { secondary: true })}</li>`)}</ul>`}
<h2>Set a secret</h2>
<form method="post" action="/apps/${appId}/secrets">
<label for="secret-name">Name</label>
<input id="secret-name" name="name" required maxlength="64" autocomplete="off" spellcheck="false">
<label for="secret-value">Value</label>
<input id="secret-value" name="value" type="password" required autocomplete="off">
<button class="button" type="submit">Save secret</button>
</form>`;
}

export function routinesTab(appId: string, routines: RoutineView[], ops: string[]): SafeHtml {
  return html`<h2>Routines</h2>
${
  routines.length === 0
    ? html`<p>No routines yet.</p>`
    : html`<ul class="rows">${routines.map(
        (r) => html`<li><div><span class="label">${r.op}</span>, ${r.interval}: ${r.enabled ? "enabled" : `disabled (${r.disabled_reason ?? "owner"})`}
<span class="muted">last run ${r.last_run_at ?? "never"}${r.last_outcome !== null && html`, ${r.last_outcome}`}${r.last_error !== null && html`: ${r.last_error.kind}: ${r.last_error.message}`}</span></div>
${actionButton(`/apps/${appId}/routines/${r.id}/run`, `Run ${r.op} now`)}
${actionButton(`/apps/${appId}/routines/${r.id}/toggle`, r.enabled ? `Disable ${r.op}` : `Enable ${r.op}`, { secondary: true, hidden: { enabled: r.enabled ? "false" : "true" } })}</li>`,
      )}</ul>`
}
<h2>New routine</h2>
<form method="post" action="/apps/${appId}/routines">
<label for="routine-op">Operation</label>
<select id="routine-op" name="op">${ops.map((op) => html`<option>${op}</option>`)}</select>
<label for="routine-interval">Every</label>
<select id="routine-interval" name="interval"><option value="hourly">hour</option><option value="daily">day</option><option value="weekly">week</option></select>
<button class="button" type="submit">Create routine</button>
</form>`;
}

export function webhooksTab(appId: string, webhooks: WebhookView[], ops: string[], revealed: WebhookView | null): SafeHtml {
  return html`<h2>Webhooks</h2>
${
  revealed?.secret !== undefined &&
  html`<div class="reveal" role="alert"><p>The secret of <span class="label">${revealed.name}</span>, shown this once: copy it now.</p>
<pre id="webhook-secret">${revealed.secret}</pre>
<button class="button" type="button" data-copy="webhook-secret">Copy the secret</button></div>`
}
${
  webhooks.length === 0
    ? html`<p>No webhooks yet.</p>`
    : html`<ul class="rows">${webhooks.map(
        (w) => html`<li><div><a href="/apps/${appId}/webhooks/${w.id}">${w.name}</a> runs <span class="label">${w.op}</span>${!w.enabled && html` (disabled)`}
<span class="muted" id="hook-url-${w.id}">${w.url}</span></div>
<button class="button secondary" type="button" data-copy="hook-url-${w.id}">Copy ${w.name}'s URL</button>
${actionButton(`/apps/${appId}/webhooks/${w.id}/rotate`, `Rotate ${w.name}'s secret`, { secondary: true })}
${actionButton(`/apps/${appId}/webhooks/${w.id}/toggle`, w.enabled ? `Disable ${w.name}` : `Enable ${w.name}`, { secondary: true, hidden: { enabled: w.enabled ? "false" : "true" } })}
${actionButton(`/apps/${appId}/webhooks/${w.id}/delete`, `Delete ${w.name}`, { secondary: true })}</li>`,
      )}</ul>`
}
<h2>New webhook</h2>
<form method="post" action="/apps/${appId}/webhooks">
<label for="webhook-op">Operation it runs</label>
<select id="webhook-op" name="op">${ops.map((op) => html`<option>${op}</option>`)}</select>
<label for="webhook-name">Name</label>
<input id="webhook-name" name="name" maxlength="80">
<button class="button" type="submit">Create webhook</button>
</form>`;
}

export function deliveriesBody(appId: string, webhook: WebhookView, deliveries: DeliveryView[]): SafeHtml {
  return html`<p><a href="/apps/${appId}/webhooks">← Webhooks</a></p>
<h2>${webhook.name}: deliveries</h2>
<p>Delivery URL: <span class="label">${webhook.url}</span></p>
<form method="post" action="/apps/${appId}/webhooks/${webhook.id}/rename" class="inline">
<label for="webhook-rename">Name</label>
<input id="webhook-rename" name="name" required maxlength="80" value="${webhook.name}">
<button class="button secondary" type="submit">Rename</button>
</form>
${
  deliveries.length === 0
    ? html`<p>No deliveries yet.</p>`
    : html`<ul class="rows">${deliveries.map(
        (d) => html`<li><div><span class="label">${d.ts}</span> ${d.status} ${d.outcome}${d.refusal !== undefined && html` (${d.refusal})`}, ${d.durationMs} ms
<span class="muted">request</span><pre>${d.requestBody ?? ""}${d.requestTruncated && " …"}</pre>
<span class="muted">response</span><pre>${d.responseBody ?? ""}${d.responseTruncated && " …"}</pre></div></li>`,
      )}</ul>`
}`;
}

/**
 * Appends diag entries as they happen, from the tab's own event stream, built with text nodes
 * only (an entry is the app's text, never markup). Without script the page is complete as served.
 */
/** How many of the app's newest log lines the diagnostics tab shows. */
export const LOG_LINES_SHOWN = 100;

export const DIAG_LIVE_SCRIPT = `(() => {
  const list = document.getElementById("diag-list");
  const empty = document.getElementById("diag-empty");
  if (!list || !window.EventSource) return;
  const events = new EventSource(location.pathname.replace(/\\/$/, "") + "/live");
  // Marks the list as live once the stream is open (tests and styles can tell).
  events.addEventListener("hello", () => { list.dataset.live = "on"; });
  events.addEventListener("diag", (event) => {
    const e = JSON.parse(event.data);
    const item = document.createElement("li");
    const box = document.createElement("div");
    const meta = document.createElement("span");
    meta.className = "muted";
    meta.textContent = e.ts + " · " + e.source;
    const text = document.createElement("pre");
    text.textContent = e.message + (e.stack ? "\\n" + e.stack : "");
    box.append(meta, text);
    item.append(box);
    list.append(item);
    // The ring keeps 50; so does the page.
    while (list.children.length > 50) list.firstElementChild.remove();
    if (empty) empty.hidden = true;
  });
  const lines = document.getElementById("log-list");
  const none = document.getElementById("log-empty");
  events.addEventListener("log", (event) => {
    if (!lines) return;
    const l = JSON.parse(event.data);
    const item = document.createElement("li");
    item.className = "log-" + l.level;
    const meta = document.createElement("span");
    meta.className = "muted";
    meta.textContent = l.time + " · " + l.level + " · " + l.op + (l.requestId ? " · " + l.requestId : "");
    const text = document.createElement("pre");
    text.textContent = l.message;
    item.append(meta, text);
    lines.prepend(item);
    // Newest first, as many as the page was drawn with.
    while (lines.children.length > ${LOG_LINES_SHOWN}) lines.lastElementChild.remove();
    if (none) none.hidden = true;
  });
})();`;


/** The request an event's failure came from (X-Request-Id), to find its log lines by. */
function requestIdOf(event: ActivityEvent): string | null {
  const id = event.data.requestId;
  return typeof id === "string" ? id : null;
}

export function diagnosticsTab(entries: DiagEntry[], lines: readonly LogLineView[], activity: ActivityEvent[], filter: SafeHtml): SafeHtml {
  // Oldest first; the page's script appends what arrives while it is open (DIAG_LIVE_SCRIPT).
  return html`<h2>Logs</h2>
<p class="muted">What the app's code printed during its op calls on this instance, newest first (agents: <span class="label">get_logs</span>, or <code>GET /app/{id}/logs</code>).</p>
<p id="log-empty"${lines.length > 0 && html` hidden`}>No lines yet.</p>
<ul class="rows" id="log-list" aria-live="polite">${lines.map((l) => html`<li class="log-${l.level}"><span class="muted">${l.time} · ${l.level} · ${l.op}${l.requestId !== null && ` · ${l.requestId}`}</span><pre>${l.message}</pre></li>`)}</ul>
<h2>Recent errors</h2>
<p id="diag-empty"${entries.length > 0 && html` hidden`}>Nothing recorded.</p>
<ul class="rows" id="diag-list" aria-live="polite">${[...entries].reverse().map((e) => html`<li><div><span class="muted">${e.ts} · ${e.source}</span><pre>${e.message}${e.stack !== "" && `\n${e.stack}`}</pre></div></li>`)}</ul>
<h2>Activity</h2>
${filter}
${activity.length === 0 ? html`<p>No events.</p>` : html`<ul class="rows">${activity.map((a) => html`<li><div><span class="muted">${a.ts} · ${a.kind} · revision ${a.revision}${requestIdOf(a) === null ? "" : html` · request <code>${requestIdOf(a) ?? ""}</code>`}</span> ${a.summary}</div></li>`)}</ul>`}`;
}

export function sourceTab(source: { revision: number; module: string; ui: string | null; styles: string | null }): SafeHtml {
  return html`<h2>Source at revision ${source.revision}</h2>
<p class="muted">Read-only. Agents edit it with <span class="label">edit_source</span> (ETag <span class="label">"${source.revision}"</span>).</p>
<h3>Module</h3><pre>${source.module}</pre>
${source.ui !== null && html`<h3>UI script</h3><pre>${source.ui}</pre>`}
${source.styles !== null && html`<h3>Styles</h3><pre>${source.styles}</pre>`}`;
}

export interface OperationCall {
  op: string;
  input: string;
  /** The envelope as JSON text: `{ok: true, value}` or the error envelope. */
  result: string;
}

export function operationsTab(appId: string, operations: { id: string; title: string | null; access: string; input: unknown; output: unknown }[], last: OperationCall | null): SafeHtml {
  return html`<h2>Operations</h2>
${last !== null && html`<div class="notice" role="status"><p><span class="label">${last.op}</span> answered:</p><pre id="call-result">${last.result}</pre></div>`}
${operations.map(
  (op) => html`<section aria-labelledby="op-${op.id}">
<h3 id="op-${op.id}">${op.id} <span class="muted">(${op.access})</span></h3>
${op.title !== null && html`<p>${op.title}</p>`}
<details><summary>Input schema</summary><pre>${JSON.stringify(op.input ?? { type: "object" }, null, 2)}</pre></details>
<form method="post" action="/apps/${appId}/operations/${op.id}">
<label for="input-${op.id}">Input (JSON)</label>
<textarea id="input-${op.id}" name="input" rows="3" spellcheck="false">${last?.op === op.id ? last.input : "{}"}</textarea>
<button class="button" type="submit">Run ${op.id}</button>
</form>
</section>`,
)}`;
}

export function settingsSection(app: { id: string; visibility: string; remixable: boolean; starterPrompt: string | null }, canManage: boolean): SafeHtml {
  if (!canManage) return html``;
  const appId = app.id;
  const visibility = app.visibility;
  return html`<h2>Settings</h2>
<form method="post" action="/apps/${appId}/visibility">
<label for="visibility">Who may open it</label>
<select id="visibility" name="visibility">${(["private", "signed-in", "public"] as const).map(
    (v) => html`<option value="${v}"${v === visibility && html` selected`}>${v === "private" ? "Only people it is shared with" : v === "signed-in" ? "Anyone signed in" : "Anyone with the link"}</option>`,
  )}</select>
<button class="button" type="submit">Save visibility</button>
</form>
<form method="post" action="/apps/${appId}/remixable">
<input type="hidden" name="remixable" value="${app.remixable ? "false" : "true"}">
<p>${app.remixable ? "Anyone may copy it while it is public." : "Nobody else may copy it."}</p>
<button class="button secondary" type="submit">${app.remixable ? "Stop letting people copy it" : "Let people copy it while public"}</button>
</form>
<form method="post" action="/apps/${appId}/starter-prompt">
<label for="starter-prompt">Starter prompt (leads the open-in-chat and copy-prompt text)</label>
<textarea id="starter-prompt" name="starter_prompt" rows="3" maxlength="2000">${app.starterPrompt ?? ""}</textarea>
<button class="button" type="submit">Save starter prompt</button>
</form>
<h2>Delete</h2>
<form method="post" action="/apps/${appId}/delete">
<label for="confirm">Type the app's manifest id to delete it and everything it stores</label>
<input id="confirm" name="confirm" required autocomplete="off" spellcheck="false">
<button class="button danger" type="submit">Delete this app</button>
</form>`;
}

export function assetsTab(appId: string, assets: { key: string; contentType: string; sizeBytes: number; updatedAt: string }[], quotaBytes: number, canChange: boolean): SafeHtml {
  const upload = html`<h2>Upload</h2>
<form method="post" action="/apps/${appId}/assets" enctype="multipart/form-data">
<label for="asset-key">Key (a path, like images/logo.png)</label>
<input id="asset-key" name="key" required maxlength="256" autocomplete="off" spellcheck="false">
<label for="asset-file">File (at most 10 MiB)</label>
<input id="asset-file" name="file" type="file" required>
<button class="button" type="submit">Upload</button>
</form>`;
  const used = assets.reduce((sum, a) => sum + a.sizeBytes, 0);
  return html`<h2>Assets</h2>
<p>${mebibytes(used)} of ${mebibytes(quotaBytes)} used.</p>
<meter min="0" max="${quotaBytes}" value="${used}" aria-label="Asset storage used">${Math.round((used / quotaBytes) * 100)}%</meter>
${
  assets.length === 0
    ? html`<p>No assets.</p>`
    : html`<ul class="rows">${assets.map(
        (a) => html`<li><div><span class="label">${a.key}</span><span class="muted">${a.contentType} · ${mebibytes(a.sizeBytes)} · ${a.updatedAt}</span></div>
${canChange && actionButton(`/apps/${appId}/assets/delete`, `Delete ${a.key}`, { secondary: true, hidden: { key: a.key } })}</li>`,
      )}</ul>`
}
${canChange && upload}`;
}

export function feedbackTab(appId: string, items: { id: string; text: string; email: string | null; revision: number; createdAt: string }[]): SafeHtml {
  return html`<h2>Feedback</h2>
${
  items.length === 0
    ? html`<p>No feedback yet. People send it from the app's page.</p>`
    : html`<ul class="rows">${items.map(
        (f, i) => html`<li><div><span class="muted">${f.createdAt} · revision ${f.revision}${f.email !== null && html` · ${f.email}`}</span><p>${f.text}</p>
<form method="post" action="/apps/${appId}/feedback/${f.id}/reply">
<label for="reply-${i}">Reply</label>
<textarea id="reply-${i}" name="text" rows="2" required maxlength="16384"></textarea>
<button class="button secondary" type="submit">Send reply</button>
</form></div></li>`,
      )}</ul>`
}`;
}

function mebibytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function versionsTab(appId: string, current: number, versions: { revision: number; createdAt: string; sizeBytes: number; restorable: boolean }[], canWrite: boolean): SafeHtml {
  return html`<h2>Versions</h2>
<p>The app runs revision ${current}. Restoring makes an old revision the next one.</p>
<ul class="rows">${versions.map(
    (v) => html`<li><div><span class="label">Revision ${v.revision}</span><span class="muted">${v.createdAt} · ${mebibytes(v.sizeBytes)}${!v.restorable && " · not restorable"}</span></div>
${canWrite && v.revision !== current && v.restorable && actionButton(`/apps/${appId}/versions/${v.revision}/restore`, `Restore revision ${v.revision}`, { secondary: true, hidden: { expected: String(current) } })}</li>`,
  )}</ul>`;
}

export function sharesTab(appId: string, shares: { shareId: string; grantee: string; role: string; status: string }[]): SafeHtml {
  return html`<h2>Shared with</h2>
${
  shares.length === 0
    ? html`<p>Nobody yet.</p>`
    : html`<ul class="rows">${shares.map(
        (s) => html`<li><div><span class="label">${s.grantee}</span><span class="muted">${s.role} · ${s.status}</span></div>
${actionButton(`/apps/${appId}/shares/${s.shareId}/revoke`, `Revoke ${s.grantee}`, { secondary: true })}</li>`,
      )}</ul>`
}
<h2>Share</h2>
<form method="post" action="/apps/${appId}/shares">
<label for="grantee">Handle or email</label>
<input id="grantee" name="grantee" required maxlength="254" autocomplete="off">
<label for="share-role">Role</label>
<select id="share-role" name="role"><option value="collaborator">Collaborator: edits and runs it</option><option value="end-user">User: runs it</option><option value="viewer">Viewer: runs read operations</option></select>
<button class="button" type="submit">Invite</button>
</form>`;
}

export function activityFilter(appId: string, kinds: readonly string[], chosen: { kind: string; within: string }): SafeHtml {
  return html`<form method="get" action="/apps/${appId}/diagnostics" class="filters">
<label for="activity-kind">Kind</label>
<select id="activity-kind" name="kind"><option value="">All kinds</option>${kinds.map((k) => html`<option value="${k}"${k === chosen.kind && html` selected`}>${k}</option>`)}</select>
<label for="activity-within">Within</label>
<select id="activity-within" name="within">${(["", "hour", "day", "week"] as const).map(
    (w) => html`<option value="${w}"${w === chosen.within && html` selected`}>${w === "" ? "Any time" : `The last ${w}`}</option>`,
  )}</select>
<button class="button secondary" type="submit">Filter</button>
</form>`;
}

/**
 * Op calls and failures per hour over the last 7 days as an inline SVG bar chart (168 hours;
 * each bar the hour's calls, its failed part in red; presentation attributes only, as the page
 * CSP allows no inline style), with a text summary for screen readers and a legend.
 */
export function callsChart(perHour: Map<number, { calls: number; failures: number }>, now: number): SafeHtml {
  const HOUR = 3_600_000;
  const end = Math.floor(now / HOUR) * HOUR;
  const hours = Array.from({ length: 168 }, (_, i) => end - (167 - i) * HOUR);
  const counts = hours.map((h) => perHour.get(h) ?? { calls: 0, failures: 0 });
  const max = Math.max(1, ...counts.map((c) => c.calls));
  const calls = counts.reduce((a, c) => a + c.calls, 0);
  const failures = counts.reduce((a, c) => a + c.failures, 0);
  const busiest = counts.reduce((best, c, i) => (c.calls > (counts[best]?.calls ?? 0) ? i : best), 0);
  const hourLabel = (i: number) => `${new Date(hours[i] ?? end).toISOString().slice(0, 13)}:00 UTC`;
  const label =
    calls === 0
      ? "No operation calls in the last 7 days."
      : `${calls} calls, ${failures} failed, in the last 7 days; the most, ${counts[busiest]?.calls ?? 0}, in the hour from ${hourLabel(busiest)}.`;
  const height = (n: number) => (n / max) * 58;
  return html`<h2>Operation calls per hour, last 7 days</h2>
<figure class="chart">
<svg viewBox="0 0 336 60" role="img" aria-label="${label}" preserveAspectRatio="none">
<line x1="0" y1="59.5" x2="336" y2="59.5" stroke="currentColor" stroke-opacity="0.3"></line>
${counts.map((c, i) =>
  c.calls === 0
    ? ""
    : html`<g><title>${hourLabel(i)}: ${c.calls} calls, ${c.failures} failed</title><rect x="${i * 2}" y="${60 - height(c.calls)}" width="1.6" height="${height(c.calls)}" fill="#5b6b7a"></rect>${
        c.failures > 0 && html`<rect x="${i * 2}" y="${60 - height(c.failures)}" width="1.6" height="${height(c.failures)}" fill="#b4461f"></rect>`
      }</g>`,
)}
</svg>
<figcaption>${label} <span class="legend"><span class="swatch calls"></span>calls <span class="swatch failures"></span>failed</span></figcaption>
</figure>`;
}

/** The listing's cover and screenshots, each removable, and the form that adds one. */
function mediaSection(appId: string, media: TemplateDraft["media"]): SafeHtml {
  return html`<h2>Cover and screenshots</h2>
${
  media.length === 0
    ? html`<p class="muted">No cover yet: publishing needs one.</p>`
    : html`<ul class="media">${media.map(
        (m) => html`<li><img src="${m.url}" alt="${m.alt}" width="160"> <span>${m.kind === "cover" ? "Cover" : "Screenshot"}: ${m.alt}</span> ${actionButton(`/apps/${appId}/template/media/${m.id}/delete`, `Remove ${m.kind === "cover" ? "the cover" : `screenshot “${m.alt}”`}`, { secondary: true })}</li>`,
      )}</ul>`
}
<form method="post" action="/apps/${appId}/template/media" enctype="multipart/form-data">
<label for="media-kind">Kind</label>
<select id="media-kind" name="kind"><option value="cover">Cover (replaces the current one)</option><option value="screenshot">Screenshot (up to 8)</option></select>
<label for="media-alt">Alt text (what people who cannot see the image read)</label>
<input id="media-alt" name="alt" required maxlength="300">
<label for="media-file">Image (PNG, JPEG, GIF or WebP; at most 10 MiB)</label>
<input id="media-file" name="file" type="file" accept="image/png,image/jpeg,image/gif,image/webp" required>
<button class="button" type="submit">Add the image</button>
</form>`;
}

/** The app's stored data against its cap, as a meter. */
export function storageMeter(usedBytes: number, capBytes: number): SafeHtml {
  return html`<h2>Data</h2>
<p>${mebibytes(usedBytes)} of ${mebibytes(capBytes)} stored (KV, blobs and snapshots).</p>
<meter min="0" max="${capBytes}" value="${usedBytes}" aria-label="Data stored">${Math.round((usedBytes / capBytes) * 100)}%</meter>`;
}

export interface TemplateDraft {
  title: string | null;
  summary: string | null;
  category: string | null;
  /** The cover first, then the gallery's screenshots in order. */
  media: { id: string; kind: "cover" | "screenshot"; url: string; alt: string }[];
  templateEnabled: boolean;
  listed: boolean;
  missingFields: string[];
  publicUrl: string | null;
  publishedRevision: number | null;
}

export function templateTab(appId: string, t: TemplateDraft, categories: readonly string[]): SafeHtml {
  return html`<h2>Template</h2>
<p>${
    t.listed && t.publicUrl !== null
      ? html`Published at revision ${t.publishedRevision}: <a href="${t.publicUrl}">its public page</a>.`
      : t.missingFields.length > 0
        ? html`To publish it as a template, set: ${t.missingFields.join(", ")}.`
        : "Ready to publish."
  }</p>
<form method="post" action="/apps/${appId}/template">
<label for="template-title">Title</label>
<input id="template-title" name="title" maxlength="80" value="${t.title ?? ""}">
<label for="template-summary">Summary</label>
<input id="template-summary" name="summary" maxlength="200" value="${t.summary ?? ""}">
<label for="template-category">Category</label>
<select id="template-category" name="category"><option value="">(none)</option>${categories.map((c) => html`<option${c === t.category && html` selected`}>${c}</option>`)}</select>
<button class="button" type="submit">Save draft</button>
</form>
${mediaSection(appId, t.media)}
${t.missingFields.length === 0 && !t.listed && actionButton(`/apps/${appId}/template/publish`, "Publish as a template")}
${t.templateEnabled && actionButton(`/apps/${appId}/template/disable`, "Disable the template", { secondary: true })}`;
}
