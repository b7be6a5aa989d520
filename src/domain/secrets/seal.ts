import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

// AES-256-GCM with the secret's scope as associated data: a sealed value copied onto another
// row (another owner, app or name) fails to open instead of leaking into the wrong app.
const VERSION = "v1";

export function seal(key: Buffer, scope: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(scope, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), body].map((part) => (typeof part === "string" ? part : part.toString("base64url"))).join(".");
}

export function open(key: Buffer, scope: string, sealed: string): string {
  const [version, iv, tag, body] = sealed.split(".");
  if (version !== VERSION || iv === undefined || tag === undefined || body === undefined) throw new Error("unknown sealed secret format");
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
  decipher.setAAD(Buffer.from(scope, "utf8"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
}

export function scopeOf(ownerUserId: string, manifestId: string, name: string): string {
  return `${ownerUserId}\u0000${manifestId}\u0000${name}`;
}
