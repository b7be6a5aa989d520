import type { Listing } from "../../domain/templates/templates.ts";
import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";

// The public page of a published template (issue 16): what it is, its images, who made it,
// how many built from it, and "Use this template".

export function templatePage(o: { listing: Listing; handle: string | null; path: string }): SafeHtml {
  const r = o.listing.resolved;
  // Markdown is shown as its text, paragraph by paragraph: nothing in it becomes markup.
  const paragraphs = (r.contentMarkdown ?? "").split(/\n{2,}/).filter((p) => p.trim().length > 0);
  const action =
    o.handle === null
      ? html`<p><a class="button" href="/sign-in?return_to=${encodeURIComponent(o.path)}">Sign in to use this template</a></p>`
      : html`<form method="post" action="${o.path}/use"><button class="button" type="submit">Use this template</button></form>`;
  return layout({
    title: r.title ?? "Template",
    handle: o.handle,
    body: html`<h1><span class="label">${r.title ?? ""}</span></h1>
${r.summary !== null && html`<p>${r.summary}</p>`}
${r.cover !== null && html`<p><img src="${r.cover.url}" alt="${r.cover.alt}" style="max-width:100%;height:auto"></p>`}
<p>By <span class="label">@${o.listing.creator.handle}</span> · ${String(o.listing.creator.builders)} ${o.listing.creator.builders === 1 ? "person has" : "people have"} built from it${r.category !== null && html` · ${r.category}`}</p>
${action}
${paragraphs.map((p) => html`<p>${p}</p>`)}
${r.gallery.map((m) => html`<figure><img src="${m.url}" alt="${m.alt}" style="max-width:100%;height:auto">${m.caption !== null && html`<figcaption>${m.caption}</figcaption>`}</figure>`)}`,
  });
}
