import type { AppRecord } from "../../../domain/apps/queries.ts";
import { html, type HtmlValue, type SafeHtml } from "../../html.ts";
import { layout } from "../../layout.ts";

export type AppTab = "overview" | "source" | "versions" | "operations" | "shares" | "secrets" | "routines" | "webhooks" | "assets" | "feedback" | "template" | "domains" | "diagnostics";

const TABS: readonly [AppTab, string][] = [
  ["overview", "Overview"],
  ["source", "Source"],
  ["versions", "Versions"],
  ["operations", "Operations"],
  ["shares", "Sharing"],
  ["secrets", "Secrets"],
  ["routines", "Routines"],
  ["webhooks", "Webhooks"],
  ["assets", "Assets"],
  ["feedback", "Feedback"],
  ["template", "Template"],
  ["domains", "Domains"],
  ["diagnostics", "Diagnostics"],
];

/** Tabs only those with the owner's rights may open (their routes refuse everyone else). */
const OWNER_TABS: ReadonlySet<AppTab> = new Set(["domains"]);

/** Where a tab lives. */
export function tabPath(appId: string, tab: AppTab): string {
  return tab === "overview" ? `/apps/${appId}` : `/apps/${appId}/${tab}`;
}

/** One of an app's console pages: its name, the tabs (the current one marked), the tab's body. */
export function appPage(options: { handle: string; app: AppRecord; tab: AppTab; body: HtmlValue; notice?: string; ownerRights: boolean; script?: { nonce: string; source: string } }): SafeHtml {
  const { app, tab } = options;
  // Those with the owner's rights learn why (DECISIONS §15); everyone else only that it is suspended.
  const notice = app.suspension !== null ? suspensionNotice(app.suspension, options.ownerRights) : options.notice;
  const title = TABS.find(([id]) => id === tab)?.[1] ?? "";
  return layout({
    title: `${title} · ${app.displayName}`,
    handle: options.handle,
    body: html`<p><a href="/">← Your apps</a></p>
<h1>${app.displayName}</h1>
<nav aria-label="App sections"><ul class="tabs">${TABS.filter(([id]) => options.ownerRights || !OWNER_TABS.has(id)).map(
      ([id, name]) => html`<li><a href="${tabPath(app.id, id)}"${id === tab && html` aria-current="page"`}>${name}</a></li>`,
    )}</ul></nav>
${notice !== undefined && html`<p class="notice" role="status" id="suspension-notice">${notice}</p>`}
${options.body}`,
    ...(options.script === undefined ? {} : { script: options.script }),
  });
}

function suspensionNotice(suspension: NonNullable<AppRecord["suspension"]>, withReason: boolean): string {
  const whose = suspension.of === "owner" ? "Its owner's account is suspended" : "This app is suspended";
  return `${whose} by the operator${withReason ? `: ${suspension.reason}` : ""}. Its page, operations, webhooks and routines are stopped; its data is kept.`;
}

/** A small form that posts to `action` with one button (run, rotate, delete…). */
export function actionButton(action: string, label: string, options: { secondary?: boolean; hidden?: Record<string, string> } = {}): SafeHtml {
  return html`<form method="post" action="${action}" class="inline">${Object.entries(options.hidden ?? {}).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`,
  )}<button class="button${options.secondary === true ? " secondary" : ""}" type="submit">${label}</button></form>`;
}
