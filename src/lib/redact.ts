import { domainToASCII } from "node:url";

/**
 * Replaces every secret value found in `text` with `[secret NAME]`. App code can put its secrets
 * into error messages and logs; what we echo back or record must not carry them, since secrets
 * are write-only even for their owner. Values under 4 characters are left alone: replacing
 * them would mangle ordinary text, and they protect nothing.
 *
 * A secret rarely turns up only as itself: JSON escapes its `"` and `\`, URLs percent-encode it,
 * a hostname lower-cases it (or punycodes it). Each form is looked for, ignoring case, the
 * longest first, so a form that contains another is cut whole.
 */
export function secretRedactor(values: Record<string, string>): (text: string) => string {
  const forms: [string, string][] = [];
  for (const [name, value] of Object.entries(values)) {
    if (value.length < 4) continue;
    for (const form of new Set(formsOf(value))) if (form.length >= 4) forms.push([form, name]);
  }
  if (forms.length === 0) return (text) => text;
  forms.sort(([a], [b]) => b.length - a.length);
  const names = new Map(forms.map(([form, name]) => [form.toLowerCase(), name]));
  const pattern = new RegExp(forms.map(([form]) => escapeRegExp(form)).join("|"), "gi");
  return (text) => text.replace(pattern, (found) => `[secret ${names.get(found.toLowerCase()) ?? "?"}]`);
}

/**
 * The length of the longest form `secretRedactor` looks for: text cut short may end in the first
 * part of a secret, which no whole form matches, so a cut line loses this much of its end.
 */
export function longestSecretForm(values: Record<string, string>): number {
  let longest = 0;
  for (const value of Object.values(values)) if (value.length >= 4) for (const form of formsOf(value)) longest = Math.max(longest, form.length);
  return longest;
}

export type RedactorSource = (appId: string) => Promise<(text: string) => string>;

function formsOf(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  return [value, json, JSON.stringify(json).slice(1, -1), encodeURIComponent(value), encodeURI(value), domainToASCII(value)];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
