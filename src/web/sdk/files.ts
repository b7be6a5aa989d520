import { readFileSync } from "node:fs";
import { inTree } from "../../config/paths.ts";

export type BrowserScript = "sdk.js" | "ops-page.js" | "shell.js";

const cache = new Map<BrowserScript, string>();

/** A browser script of web/sdk/, read once on first use (never at import time). */
export function browserScript(name: BrowserScript): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFileSync(inTree(`web/sdk/${name}`), "utf8");
    cache.set(name, text);
  }
  return text;
}

/** JSON safe inside a <script>: no `<` can open `</script>` or `<!--`. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}
