import type { Manifest } from "../domain/source/manifest-types.ts";
import { pinnedCdnOrigins } from "../domain/source/cdn-check.ts";
import { escapeHtml } from "./html.ts";
import { browserScript as script, scriptJson } from "./sdk/files.ts";

export interface FrameOptions {
  base: string;
  appId: string;
  title: string;
  manifest: Manifest;
  ui: string | null;
  styles: string | null;
  nonce: string;
  /** The SDK's 7-day render token. */
  token: string;
  tokenExpiresAt: number;
  /** On the app's custom domain: the anonymous visitor's pass, sent with every op call (DECISIONS §12). */
  visitor?: string | null;
}

/**
 * The frame document (DECISIONS §5): `#app`, the app's styles, the SDK and the app's `ui` under
 * the nonce, or the generated operations page when there is no `ui`.
 */
export function framePage(options: FrameOptions): string {
  const config = { base: options.base, appId: options.appId, token: options.token, expiresAt: options.tokenExpiresAt, visitor: options.visitor ?? null };
  const sdk = script("sdk.js").replace("__SVC_CONFIG__", () => scriptJson(config));
  const ui =
    options.ui ??
    script("ops-page.js").replace(
      "__SVC_OPERATIONS__",
      () =>
        scriptJson(
        Object.entries(options.manifest.routes).map(([id, r]) => ({ id, title: r.title, description: r.description, access: r.access, input: r.input })),
      ),
    );
  const styles = options.styles ?? (options.ui === null ? OPS_PAGE_CSS : "");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<style>${inStyle(styles)}</style>
<script nonce="${options.nonce}">${inScript(sdk)}</script>
</head>
<body>
<div id="app"></div>
<script nonce="${options.nonce}">${inScript(ui)}</script>
</body>
</html>
`;
}

/**
 * The frame's CSP: scripts only with this response's nonce, network only to this service, no
 * plugins, no <base>, framed only by our shell, and violations reported to the app's diag.
 * Styles may be inline: app UIs set style attributes, and CSS cannot run code.
 */
export function frameCsp(base: string, appId: string, nonce: string, reportToken: string, ui: string | null = null): string {
  const origin = new URL(base).origin;
  const cdn = pinnedCdnOrigins(ui);
  return [
    "default-src 'none'",
    [`script-src 'nonce-${nonce}'`, ...cdn].join(" "),
    [`style-src ${origin} 'unsafe-inline'`, ...cdn].join(" "),
    `img-src ${origin} data: blob:`,
    `font-src ${origin} data:`,
    `media-src ${origin} data: blob:`,
    `connect-src ${origin}`,
    "form-action 'none'",
    "base-uri 'none'",
    `frame-ancestors ${origin}`,
    // The frame is sandboxed by the shell's iframe attribute; this makes it so even when someone
    // opens its URL as a page of its own, where the app's script would otherwise run on our
    // origin with the visitor's cookies.
    "sandbox allow-scripts allow-forms allow-popups",
    `report-uri ${origin}/app/${appId}/diag/report?t=${encodeURIComponent(reportToken)}`,
  ].join("; ");
}

// The app's own source sits in a raw-text element; only a closing tag or a comment opener
// could end it early, and in JavaScript `<\/` means the same as `</` inside strings and regexes.
function inScript(source: string): string {
  return source.replace(/<\/(script)/gi, "<\\/$1").replace(/<!--/g, "<\\!--");
}

function inStyle(css: string): string {
  return css.replace(/<\/(style)/gi, "<\\/$1");
}

const OPS_PAGE_CSS = `
:root { color-scheme: light dark; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0; padding: 1.25rem; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
.op { border: 1px solid #8884; border-radius: 10px; padding: 1rem; margin: 0 0 1rem; }
.op h2 { font-size: 1.1rem; margin: 0 0 .25rem; }
.meta { opacity: .75; margin: 0 0 .75rem; }
.field { margin: 0 0 .75rem; }
label { display: block; font-weight: 600; margin: 0 0 .25rem; }
input[type=text], input[type=number], select, textarea { width: 100%; box-sizing: border-box; font: inherit; padding: .45rem .6rem; border: 1px solid #8886; border-radius: 6px; }
button { font: inherit; font-weight: 600; padding: .5rem 1rem; border-radius: 6px; border: 0; background: #b4461f; color: #fff; cursor: pointer; }
.result { white-space: pre-wrap; background: #8881; padding: .5rem; border-radius: 6px; min-height: 1.5em; }
`;
