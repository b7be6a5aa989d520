/**
 * Replaces every secret value found in `text` with `[secret NAME]`. App code can put its secrets
 * into error messages and logs; what we echo back or record must not carry them, since secrets
 * are write-only even for their owner. Values under 4 characters are left alone: replacing
 * them would mangle ordinary text, and they protect nothing.
 */
export function secretRedactor(values: Record<string, string>): (text: string) => string {
  const entries = Object.entries(values)
    .filter(([, value]) => value.length >= 4)
    .sort(([, a], [, b]) => b.length - a.length);
  if (entries.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const [name, value] of entries) out = out.split(value).join(`[secret ${name}]`);
    return out;
  };
}

export type RedactorSource = (appId: string) => Promise<(text: string) => string>;
