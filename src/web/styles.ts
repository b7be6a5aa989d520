import { createHash } from "node:crypto";

// One stylesheet for every server-rendered page, inlined so a page is a single response. The
// page CSP allows exactly this text by its hash, so no other style (or any script) can run.
export const PAGE_CSS = `
:root { color-scheme: light dark; --fg: #1b1b1f; --muted: #5b5b66; --bg: #f6f5f2; --card: #fff; --line: #d9d6cf;
  --accent: #b4461f; --button: #1b1b1f; --button-fg: #fff; --error: #a4161a; }
@media (prefers-color-scheme: dark) { :root { --fg: #ecebe8; --muted: #a9a8b3; --bg: #17171a; --card: #222226;
  --line: #3a3a40; --accent: #f08a5d; --button: #ecebe8; --button-fg: #17171a; --error: #ff8a8a; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { padding: 1rem 1.5rem; display: flex; justify-content: space-between; gap: 1rem; flex-wrap: wrap; }
header .brand { font-weight: 700; color: var(--accent); }
header .who { color: var(--muted); }
main { max-width: 34rem; margin: 2rem auto; padding: 2rem; background: var(--card); border: 1px solid var(--line); border-radius: 12px; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
p { margin: 0 0 1rem; }
.muted { color: var(--muted); }
.error { color: var(--error); font-weight: 600; }
.code { font: 700 2rem/1.2 ui-monospace, "SFMono-Regular", Menlo, monospace; letter-spacing: 0.12em; text-align: center;
  padding: 1rem; border: 2px dashed var(--line); border-radius: 8px; margin: 0 0 1.5rem; }
.label { font-weight: 700; overflow-wrap: anywhere; }
.nowrap { white-space: nowrap; }
form { margin: 0; }
label { display: block; font-weight: 600; margin: 0 0 0.25rem; }
input { display: block; width: 100%; font: inherit; padding: 0.6rem 0.75rem; margin: 0 0 1rem; color: var(--fg);
  background: var(--bg); border: 1px solid var(--line); border-radius: 8px; }
.actions { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.button { display: block; width: 100%; min-height: 2.75rem; font: inherit; font-weight: 600; padding: 0.6rem 1rem; cursor: pointer;
  color: var(--button-fg); background: var(--button); border: 2px solid var(--button); border-radius: 8px; }
input:focus-visible, .button:focus-visible, a:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
a { color: var(--accent); }
a.button { text-align: center; text-decoration: none; box-sizing: border-box; }
.tabs { list-style: none; padding: 0; margin: 0 0 1rem; display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; border-bottom: 1px solid var(--line); }
.tabs a { display: inline-block; padding: 0.4rem 0; }
.tabs a[aria-current="page"] { font-weight: 700; color: var(--fg); border-bottom: 3px solid var(--accent); }
.rows { list-style: none; padding: 0; margin: 0 0 1rem; }
.rows li { padding: 0.6rem 0; border-bottom: 1px solid var(--line); display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
.rows li > div { flex: 1 1 14rem; min-width: 0; display: flex; flex-direction: column; }
form.inline .button { width: auto; min-height: 2.25rem; padding: 0.3rem 0.8rem; }
select { display: block; width: 100%; font: inherit; padding: 0.6rem 0.75rem; margin: 0 0 1rem; color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 8px; }
textarea { display: block; width: 100%; font: 0.9rem ui-monospace, "SFMono-Regular", Menlo, monospace; padding: 0.6rem 0.75rem; margin: 0 0 1rem;
  color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 8px; }
details { margin: 0 0 0.75rem; }
h3 { font-size: 1rem; margin: 1rem 0 0.5rem; }
.button.danger { background: var(--error); border-color: var(--error); color: #fff; }
.notice, .reveal { padding: 0.75rem; border: 2px solid var(--accent); border-radius: 8px; margin: 0 0 1rem; }
.chart { margin: 0 0 1rem; }
.chart svg { display: block; width: 100%; height: 5rem; color: var(--fg); border-bottom: 1px solid var(--line); }
.chart figcaption { color: var(--muted); font-size: 0.9rem; }
.legend { white-space: nowrap; margin-left: 0.5rem; }
.swatch { display: inline-block; width: 0.7rem; height: 0.7rem; margin: 0 0.25rem 0 0.5rem; border-radius: 2px; vertical-align: -0.05rem; }
.swatch.calls { background: #5b6b7a; }
.swatch.failures { background: #b4461f; }
meter { width: 100%; height: 1rem; margin: 0 0 1rem; }
.apps { list-style: none; padding: 0; margin: 0 0 1rem; }
.apps li { display: flex; gap: 0.75rem; align-items: center; padding: 0.6rem 0; border-bottom: 1px solid var(--line); }
.apps li div { display: flex; flex-direction: column; min-width: 0; }
.apps img { flex: none; border-radius: 8px; }
.media { list-style: none; padding: 0; margin: 0 0 1rem; display: grid; gap: 0.75rem; }
.media li { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: center; }
.media img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 8px; }
.button.secondary { color: var(--fg); background: transparent; border-color: var(--line); }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0 0 1rem; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0; min-width: 0; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 0.75rem; }
main:has(> article.doc) { max-width: 52rem; }
.doc table { border-collapse: collapse; margin: 0 0 1rem; width: 100%; font-size: 0.92rem; }
.doc th, .doc td { text-align: left; vertical-align: top; padding: 0.35rem 0.5rem; border-bottom: 1px solid var(--line); }
.doc code { font: 0.88em ui-monospace, "SFMono-Regular", Menlo, monospace; overflow-wrap: anywhere; }
pre { font: 0.85rem/1.45 ui-monospace, "SFMono-Regular", Menlo, monospace; white-space: pre-wrap; overflow-wrap: anywhere;
  padding: 0.75rem; border: 1px solid var(--line); border-radius: 8px; margin: 0 0 0.75rem; }
`;

export const PAGE_CSS_HASH = `sha256-${createHash("sha256").update(PAGE_CSS).digest("base64")}`;
