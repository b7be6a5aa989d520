import type { RegExpEngine } from "ajv/dist/types/index.js";
import { RE2JS } from "re2js";
import { SchemaCostError } from "./cost.ts";
import { charge } from "./meter.ts";

// A test costs about this many plain keyword checks before it reads a character.
const TEST_UNITS = 16;

/**
 * ajv's `code.regExp` for app schemas: every `pattern` and `patternProperties` key runs in RE2
 * (linear time in its input), never in V8's backtracking engine, where `^(a+)+$` on 31 characters
 * held Node's event loop for 12 s. A pattern RE2 cannot express (backreferences, lookaround)
 * throws while the schema compiles, so such a schema is refused when the app is written.
 */
export const re2Engine: RegExpEngine = Object.assign(
  (pattern: string): { test: (s: string) => boolean } => {
    let re: RE2JS;
    try {
      re = RE2JS.compile(toRe2Syntax(pattern));
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new SchemaCostError(`the pattern ${JSON.stringify(pattern)} cannot run in linear time (no backreferences or lookaround): ${reason}`);
    }
    return {
      test: (s: string) => {
        charge(TEST_UNITS + (s.length >> 2));
        return re.test(s);
      },
    };
  },
  { code: "re2" },
);

/**
 * ECMA-262 escapes RE2 spells differently: `\uXXXX` and `\u{X…}` become `\x{…}`. Everything
 * else JSON Schema authors write (`\d`, `\p{L}`, classes, `(?<name>…)`) RE2 reads as is.
 */
export function toRe2Syntax(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    const next = pattern[i + 1] ?? "";
    const braced = /^u\{([0-9a-fA-F]{1,6})\}/.exec(pattern.slice(i + 1));
    const plain = /^u([0-9a-fA-F]{4})/.exec(pattern.slice(i + 1));
    if (braced !== null) {
      out += `\\x{${braced[1]}}`;
      i += braced[0].length;
    } else if (plain !== null) {
      out += `\\x{${plain[1]}}`;
      i += plain[0].length;
    } else {
      out += c + next;
      i += 1;
    }
  }
  return out;
}
