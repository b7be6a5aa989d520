import { hash } from "node:crypto";
import { pooledRandomBytes } from "../../lib/random-pool.ts";
import { crc32 } from "node:zlib";

// Token plaintext (DECISIONS §1): `svc_<kind>_` + 43 base62 characters (256 bits) + 6 base62
// characters of CRC32 over everything before them. The checksum lets us refuse a mistyped or
// truncated token without a database lookup.
// `share` tokens ride in share-link URLs (issue 15) and, like `hook`, never authenticate a request.
export type TokenKind = "user" | "app" | "render" | "hook" | "share";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BODY_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
const SHAPE = /^svc_(user|app|render|hook|share)_([0-9A-Za-z]{49})$/;

export interface MintedToken {
  plaintext: string;
  hash: string;
  prefix: string;
}

export function mintToken(kind: TokenKind): MintedToken {
  const head = `svc_${kind}_${randomBase62(BODY_LENGTH)}`;
  const plaintext = head + checksum(head);
  return { plaintext, hash: hashToken(plaintext), prefix: plaintext.slice(0, head.length - BODY_LENGTH + 6) };
}

/** The token's kind when its shape and checksum hold; null when it is malformed. */
export function parseToken(plaintext: string): TokenKind | null {
  const match = SHAPE.exec(plaintext);
  if (match === null) return null;
  const head = plaintext.slice(0, plaintext.length - CHECKSUM_LENGTH);
  if (checksum(head) !== plaintext.slice(-CHECKSUM_LENGTH)) return null;
  return match[1] as TokenKind;
}

export function hashToken(plaintext: string): string {
  // One-shot: every authenticated request hashes its token, and a Hash object costs twice as much.
  return hash("sha256", plaintext, "hex");
}

function checksum(text: string): string {
  let value = crc32(Buffer.from(text, "utf8"));
  let out = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

/** Uniform base62 by rejection sampling: bytes ≥ 248 would bias the first 8 characters. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of pooledRandomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}
