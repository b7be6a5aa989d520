import { iso } from "../../../config/clock.ts";
import type { ListedApp } from "../../../domain/apps/listing.ts";
import type { AppRecord } from "../../../domain/apps/queries.ts";
import type { AppRole } from "../../../domain/access/access.ts";
import { html, type SafeHtml } from "../../html.ts";
import { layout } from "../../layout.ts";
import { signInForm } from "../common.ts";

// The console's front door and dashboard (issue 19): server-rendered, no script, forms only to
// ourselves under the page scope's Origin rule.

/** `/` signed out: what Brickyard is, and the ways in. */
export function landingPage(options: { signupOpen: boolean }): SafeHtml {
  return layout({
    title: "Welcome",
    body: html`<h1>Brickyard</h1>
<p>Small apps, written by AI agents, hosted here. An agent makes an app in one request, with no account;
you claim the ones you want to keep, share them, and run them on a schedule or from webhooks.</p>
${options.signupOpen && html`<p><a class="button" href="/sign-up">Create an account</a></p>`}
<h2>Sign in</h2>
${signInForm({ returnTo: "/" })}
<h2>For agents</h2>
<ul>
<li><a href="/llms.txt">llms.txt</a>: where everything an agent needs is</li>
<li><a href="/docs/apps">Writing apps</a>: the app contract, with tested examples</li>
<li><a href="/mcp/setup">Connect over MCP</a></li>
</ul>`,
  });
}

export interface SignUpValues {
  email?: string;
  handle?: string;
  error?: string;
  returnTo: string;
}

/** `/sign-up`: the form twin of `POST /api/auth/signup`. */
export function signUpPage(values: SignUpValues): SafeHtml {
  return layout({
    title: "Create an account",
    body: html`<h1>Create an account</h1>
<form method="post" action="/sign-up">
${values.error !== undefined && html`<p class="error" role="alert" id="signup-error">${values.error}</p>`}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${values.email ?? ""}">
<label for="handle">Handle</label>
<input id="handle" name="handle" autocomplete="username" required maxlength="64" value="${values.handle ?? ""}" aria-describedby="handle-hint">
<p class="muted" id="handle-hint">Lower-case letters, digits and dashes; your apps live under /@handle.</p>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required>
<input type="hidden" name="return_to" value="${values.returnTo}">
<button class="button" type="submit">Create account</button>
</form>
<p>Have an account? <a href="/sign-in?return_to=${encodeURIComponent(values.returnTo)}">Sign in</a>.</p>`,
  });
}

const ROLE_NAMES: Record<AppRole, string> = {
  owner: "Owner",
  "team-admin": "Team admin",
  "team-member": "Team member",
  collaborator: "Collaborator",
  "app-token": "App token",
  "end-user": "User",
  viewer: "Viewer",
  visitor: "Visitor",
};

/** `/` signed in: the person's apps, newest first, with a name search and older pages. */
export function dashboardPage(options: { handle: string; rows: ListedApp[]; lastCalled: Map<string, number>; search: string; nextCursor: string | null; verified: boolean }): SafeHtml {
  const { rows, search } = options;
  return layout({
    title: "Your apps",
    handle: options.handle,
    body: html`<h1>Your apps</h1>
${
  !options.verified &&
  html`<div class="notice" role="status"><p>Confirm your email address: we sent you a link.</p>
<form method="post" action="/account/verify-email" class="inline"><button class="button secondary" type="submit">Send the link again</button></form></div>`
}
<form method="get" action="/" role="search">
<label for="q">Search by name</label>
<input id="q" name="q" type="search" value="${search}">
<button class="button" type="submit">Search</button>
</form>
${
  rows.length === 0
    ? html`<p>${search === "" ? "No apps yet. Ask an agent to make one, then claim it from the link it gives you." : html`No app matches “${search}”.`}</p>`
    : html`<ul class="apps">${rows.map(({ app, role }) => appRow(app, role, options.lastCalled.get(app.id) ?? null))}</ul>`
}
${options.nextCursor !== null && html`<p><a href="/?${new URLSearchParams({ ...(search === "" ? {} : { q: search }), cursor: options.nextCursor }).toString()}">Older apps</a></p>`}
<p><a href="/account">Account and tokens</a></p>
<form method="post" action="/sign-out"><button class="button secondary" type="submit">Sign out</button></form>`,
  });
}

/** `lastCall`: the hour of the app's latest op call, if it had one in the 8 days counts are kept. */
function appRow(app: AppRecord, role: AppRole, lastCall: number | null): SafeHtml {
  return html`<li>
<img src="/app/${app.id}/icon.svg" alt="" width="40" height="40">
<div><a href="/apps/${app.id}">${app.displayName}</a>
<span class="muted">${ROLE_NAMES[role]} · revision ${app.revision} · ${app.ownerUserId === null ? html`unclaimed, expires ${day(app.expiresAt)}` : html`created ${day(app.createdAt)}`} · ${lastCall === null ? "no calls this week" : html`last call ${iso(lastCall).slice(0, 13).replace("T", " ")}:00 UTC`}</span></div>
</li>`;
}

/** The overview tab of `/apps/{id}`. */
export function appOverviewBody(options: { app: AppRecord; role: AppRole; url: string }): SafeHtml {
  const { app } = options;
  const routes = Object.entries(app.manifest.routes);
  return html`${app.manifest.description !== null && html`<p>${app.manifest.description}</p>`}
<p><a class="button" href="${options.url}">Open the app</a></p>
<dl class="facts">
<dt>Address</dt><dd><span class="label">${options.url}</span></dd>
<dt>Your role</dt><dd>${ROLE_NAMES[options.role]}</dd>
<dt>Revision</dt><dd>${app.revision}</dd>
<dt>Visibility</dt><dd>${app.visibility}</dd>
<dt>Created</dt><dd>${day(app.createdAt)}</dd>
</dl>
<h2>Operations</h2>
${routes.length === 0 ? html`<p>None.</p>` : html`<ul>${routes.map(([id, route]) => html`<li><span class="label">${id}</span> (${route.access})${route.title !== null && html`: ${route.title}`}</li>`)}</ul>`}`;
}

function day(ms: number | null): string {
  return ms === null ? "never" : iso(ms).slice(0, 10);
}
