import { apiError } from "../../errors/index.ts";

// DECISIONS §10: the CDNs a UI may load code from, and only at an exact version (`name@1.2.3`,
// scoped names too): an unversioned URL serves whatever is published next, unreviewed.
const CDN_URL = /https?:\/\/(?:cdn\.jsdelivr\.net|unpkg\.com|esm\.sh)\/[^\s"'`<>)\\]*/gi;
const PINNED = /^https:\/\/(?:cdn\.jsdelivr\.net\/npm|unpkg\.com|esm\.sh)\/(?:@[a-z0-9._-]+\/)?[a-z0-9._-]+@\d+\.\d+\.\d+(?:-[0-9a-z.-]+)?(?:[/?#]|$)/i;

/** Every CDN URL the UI names must be pinned to an exact version: else 400 `unpinned_cdn_script`. */
export function checkCdnScripts(ui: string | null): void {
  if (ui === null) return;
  for (const match of ui.matchAll(CDN_URL)) {
    const url = match[0];
    if (PINNED.test(url)) continue;
    const line = ui.slice(0, match.index).split("\n").length;
    throw apiError(
      "unpinned_cdn_script",
      `the UI loads ${url} (line ${line}), which is not pinned to an exact version; write it as https://cdn.jsdelivr.net/npm/<name>@<x.y.z>/…, https://unpkg.com/<name>@<x.y.z>/… or https://esm.sh/<name>@<x.y.z>`,
      { details: { url, line } },
    );
  }
}

/** The CDN origins a UI loads pinned code from: they join the frame's script and style sources. */
export function pinnedCdnOrigins(ui: string | null): string[] {
  if (ui === null) return [];
  const origins = new Set<string>();
  for (const match of ui.matchAll(CDN_URL)) {
    if (PINNED.test(match[0])) origins.add(new URL(match[0]).origin);
  }
  return [...origins].sort();
}
