import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const KEY_FILE = "secrets.key";

/**
 * The 32-byte key that seals secrets at rest: SECRETS_KEY when set, else a key generated once
 * into DATA_DIR with 0600 permissions. Instances sharing a PostgreSQL database must share the
 * key, so they set SECRETS_KEY.
 */
export function loadSecretsKey(configured: string | null, dataDir: string): Buffer {
  if (configured !== null) return Buffer.from(configured, "base64");
  const path = join(dataDir, KEY_FILE);
  try {
    return decode(readFileSync(path, "utf8"), path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  try {
    // `wx` fails if another process created the file first; then we read theirs.
    writeFileSync(path, randomBytes(32).toString("base64") + "\n", { flag: "wx", mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  chmodSync(path, 0o600);
  return decode(readFileSync(path, "utf8"), path);
}

function decode(text: string, path: string): Buffer {
  const key = Buffer.from(text.trim(), "base64");
  if (key.length !== 32) throw new Error(`${path} does not hold a 32-byte base64 key`);
  return key;
}
