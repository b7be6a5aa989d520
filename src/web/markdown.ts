import { html, unsafeRaw, type SafeHtml } from "./html.ts";

/**
 * The small part of Markdown our own docs use (docs/apps.md): `#` headings, paragraphs, `-`
 * lists, pipe tables, fenced code with an info string, and inline `code`. Everything is escaped;
 * a fence's info string (`js example=counter`) becomes the code element's language and data
 * attributes, which is how tests find the examples on the served page.
 */
export function renderMarkdown(source: string): SafeHtml {
  const out: SafeHtml[] = [];
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; ) {
    const line = lines[i] ?? "";
    const fence = /^```(\S*)\s*(.*)$/.exec(line);
    if (fence !== null) {
      const body: string[] = [];
      for (i++; i < lines.length && !(lines[i] ?? "").startsWith("```"); i++) body.push(lines[i] ?? "");
      i++;
      out.push(codeBlock(fence[1] ?? "", fence[2] ?? "", body.join("\n")));
      continue;
    }
    const heading = /^(#{1,3}) (.*)$/.exec(line);
    if (heading !== null) {
      const level = heading[1]?.length ?? 1;
      const text = heading[2] ?? "";
      const id = text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
      out.push(unsafeRaw(`<h${level} id="${id}">${inline(text).value}</h${level}>`));
      i++;
      continue;
    }
    if (line.startsWith("|")) {
      const rows: string[][] = [];
      for (; i < lines.length && (lines[i] ?? "").startsWith("|"); i++) {
        const cells = (lines[i] ?? "").replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
        if (!cells.every((c) => /^-+$/.test(c))) rows.push(cells);
      }
      const [head, ...body] = rows;
      out.push(html`<table><thead><tr>${(head ?? []).map((c) => html`<th>${inline(c)}</th>`)}</tr></thead>
<tbody>${body.map((row) => html`<tr>${row.map((c) => html`<td>${inline(c)}</td>`)}</tr>`)}</tbody></table>`);
      continue;
    }
    if (line.startsWith("- ")) {
      const items: string[] = [];
      for (; i < lines.length && (lines[i] ?? "").trim() !== "" && !/^(#|```|\|)/.test(lines[i] ?? ""); i++) {
        const item = lines[i] ?? "";
        if (item.startsWith("- ")) items.push(item.slice(2));
        else items[items.length - 1] += ` ${item.trim()}`;
      }
      out.push(html`<ul>${items.map((item) => html`<li>${inline(item)}</li>`)}</ul>`);
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const paragraph: string[] = [];
    for (; i < lines.length && (lines[i] ?? "").trim() !== "" && !/^(#|```|\||- )/.test(lines[i] ?? ""); i++) paragraph.push(lines[i] ?? "");
    out.push(html`<p>${inline(paragraph.join(" "))}</p>`);
  }
  return html`${out}`;
}

function codeBlock(language: string, info: string, body: string): SafeHtml {
  const data = [...info.matchAll(/([a-z]+)=([A-Za-z0-9_-]+)/g)].map(([, key, value]) => html` data-${key ?? ""}="${value ?? ""}"`);
  return html`<pre><code class="language-${language}"${data}>${body}</code></pre>`;
}

/** `code` spans; the rest is text. */
function inline(text: string): SafeHtml {
  return html`${text.split(/(`[^`]+`)/).map((part) => (part.startsWith("`") && part.endsWith("`") && part.length > 1 ? html`<code>${part.slice(1, -1)}</code>` : part))}`;
}
