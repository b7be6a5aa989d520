import type { AppRecord } from "../domain/apps/queries.ts";

/**
 * A minimal page for an app until the app shell (sandboxed frame, SDK, watermark) lands: the
 * name, the icon and where the app lives. Everything interpolated is escaped.
 */
export function appPlaceholderPage(app: AppRecord, baseUrl: string): string {
  const name = escapeHtml(app.displayName);
  const icon = `${baseUrl}/app/${app.id}/icon.svg`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${name}</title>
<link rel="icon" href="${escapeHtml(icon)}">
</head>
<body>
<main>
<h1><img src="${escapeHtml(icon)}" alt="" width="32" height="32"> ${name}</h1>
<p>Revision ${app.revision}${app.ownerUserId === null ? " · unclaimed" : ""}</p>
<div id="app"></div>
</main>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
