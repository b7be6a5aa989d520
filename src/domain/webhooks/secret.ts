import { hash, timingSafeEqual } from "node:crypto";
import { mintToken, parseToken } from "../tokens/format.ts";

export interface HookSecret {
  plaintext: string;
  hash: string;
  prefix: string;
}

export function mintHookSecret(): HookSecret {
  return mintToken("hook");
}

/**
 * Whether `presented` is the secret whose SHA-256 is `storedHash`. Both sides are compared as
 * fixed-length digests in constant time, so neither length nor content leaks through timing.
 */
export function secretMatches(presented: string | null, storedHash: string): boolean {
  if (presented === null || parseToken(presented) !== "hook") return false;
  const digest = hash("sha256", presented, "buffer");
  const stored = Buffer.from(storedHash, "hex");
  return stored.length === digest.length && timingSafeEqual(digest, stored);
}

const ANY_HOOK_SECRET = /svc_hook_[0-9A-Za-z]{49}/g;
const KEY_QUERY = /([?&]key=)[^&#"\s]*/gi;

/** Text as it may be stored: hook secrets and `?key=` values cut out (DECISIONS §1, §8). */
export function redactSecrets(text: string): string {
  return text.replace(ANY_HOOK_SECRET, "[redacted]").replace(KEY_QUERY, "$1[redacted]");
}
