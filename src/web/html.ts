/**
 * A tiny HTML templating helper that escapes everything by default. `html` templates produce
 * `SafeHtml`; anything interpolated that is not itself `SafeHtml` is escaped, so a label, a
 * handle or an error message can never become markup. Arrays render item by item; `null`,
 * `undefined` and `false` render nothing, so `cond && html`…`` reads naturally.
 *
 * Escaping makes text safe in element content and in double-quoted attributes. It does not make
 * a URL safe in `href`/`src` (`javascript:` survives escaping): only put URLs there that the
 * server built itself or checked with `sameOriginPath`.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type HtmlValue = SafeHtml | string | number | false | null | undefined | readonly HtmlValue[];

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return new SafeHtml(out);
}

/** Trusted markup that did not come from `html` (a constant stylesheet, say). Never user data. */
export function unsafeRaw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map((item: HtmlValue) => render(item)).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

// A path on this site: `/…`, never `//host` or `/\host`, which browsers treat as hosts.
const LOCAL_PATH = /^\/(?![/\\])/;

/**
 * `candidate` as a path on this site (for `return_to` after sign-in), or `fallback` when it
 * would leave it: only `/…` paths, never `//host` or `/\host`, which browsers treat as hosts.
 */
export function sameOriginPath(candidate: string | undefined, fallback: string): string {
  if (candidate === undefined || !LOCAL_PATH.test(candidate)) return fallback;
  const url = new URL(candidate, "http://same.invalid");
  const path = url.pathname + url.search;
  // Checked again once normalised: `/.//host` and `/%2e//host` become `//host`.
  return url.origin === "http://same.invalid" && LOCAL_PATH.test(path) ? path : fallback;
}

