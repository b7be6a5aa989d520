import { apiError, type ApiError } from "../errors/index.ts";

/**
 * How deep JSON that comes from outside may nest. V8 parses any depth, but serializing it again
 * (JSON.stringify, a schema check, a copy) recurses, and past some ten thousand levels Node's
 * stack runs out: a body of 20,000 nested arrays made `POST /mcp` answer 500. Nothing a person or
 * an app needs nests this deep; what does is refused before it is parsed.
 */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether JSON text nests objects and arrays deeper than `max`, counted by one pass over it that
 * skips strings; the text need not be valid JSON (the parser says what else is wrong with it).
 */
export function nestsDeeperThan(text: string | Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  const length = text.length;
  const at = typeof text === "string" ? (i: number) => text.charCodeAt(i) : (i: number) => text[i] ?? 0;
  for (let i = 0; i < length; i++) {
    const c = at(i);
    if (inString) {
      if (c === BACKSLASH) i += 1;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth -= 1;
  }
  return false;
}

/** The refusal of JSON text nested past MAX_JSON_DEPTH (400 `invalid_request`), or null. */
export function nestingError(text: string | Uint8Array, what = "the body"): ApiError | null {
  if (!nestsDeeperThan(text)) return null;
  return apiError("invalid_request", `${what} nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`, { details: { reason: "too_deep", maxDepth: MAX_JSON_DEPTH } });
}
