import { randomInt } from "node:crypto";
import { hashToken, randomBase62 } from "../tokens/format.ts";

// The spec's user-code alphabet, [A-Z2-9]: 0 and 1 are left out so they cannot pass for O and I.
const USER_CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ23456789";
const USER_CODE_LENGTH = 6;
const USER_CODE_PREFIX = "SVC";
export const USER_CODE_PATTERN = /^SVC-[A-Z2-9]{6}$/;
// 43 base62 characters carry 256 bits, like our bearer tokens.
const DEVICE_CODE_LENGTH = 43;

/** `SVC-` + 6 characters drawn uniformly with the CSPRNG (`randomInt` rejects biased draws). */
export function generateUserCode(): string {
  let body = "";
  for (let i = 0; i < USER_CODE_LENGTH; i++) body += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return `${USER_CODE_PREFIX}-${body}`;
}

export function generateDeviceCode(): { plaintext: string; hash: string } {
  const plaintext = randomBase62(DEVICE_CODE_LENGTH);
  return { plaintext, hash: hashDeviceCode(plaintext) };
}

export function hashDeviceCode(plaintext: string): string {
  return hashToken(plaintext);
}

/**
 * What a person typed, as the stored `SVC-XXXXXX`, or null when it cannot be a code. Case,
 * dashes and spaces do not matter, and the `SVC` prefix may be left off.
 */
export function normalizeUserCode(input: string): string | null {
  let compact = input.replace(/[\s-]+/g, "").toUpperCase();
  if (compact.length === USER_CODE_LENGTH) compact = USER_CODE_PREFIX + compact;
  const code = `${compact.slice(0, USER_CODE_PREFIX.length)}-${compact.slice(USER_CODE_PREFIX.length)}`;
  return USER_CODE_PATTERN.test(code) ? code : null;
}
