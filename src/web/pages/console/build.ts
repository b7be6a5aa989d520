import type { BuildStatus } from "../../../domain/builds/status.ts";
import { html, type SafeHtml } from "../../html.ts";
import { layout } from "../../layout.ts";

const DONE: Record<string, string> = {
  published: "Published",
  failed: "Failed",
  superseded: "Replaced by a newer write",
  canceled: "Canceled",
  expired: "Expired",
};

/** `/builds/{id}`: a build's progress for a person (agents poll the JSON at its statusUrl). */
export function buildPage(options: { handle: string | null; status: BuildStatus }): SafeHtml {
  const s = options.status;
  const done = DONE[s.state];
  return layout({
    title: "Build",
    handle: options.handle,
    body: html`<h1>${done ?? "Building…"}</h1>
<p>The app's npm packages are ${done === undefined ? html`being bundled (<span class="label">${s.state}</span>, attempt ${s.attempts})` : "done being bundled"}.</p>
${s.error !== undefined && html`<p class="error" role="alert">${s.error.kind}: ${s.error.message}</p>`}
${s.resolvedDependencies !== undefined && html`<h2>Packages</h2><ul>${Object.entries(s.resolvedDependencies.server).map(([name, version]) => html`<li><span class="label">${name}</span> ${version}</li>`)}</ul>`}
${s.state === "published" && s.appId !== undefined ? html`<p><a class="button" href="/apps/${s.appId}">Go to the app</a></p>` : done === undefined && html`<p><a class="button secondary" href="/builds/${s.buildId}">Refresh</a></p>`}`,
  });
}
