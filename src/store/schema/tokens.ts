/** Bearer tokens of every kind that names a principal: user, app and render tokens. */
export interface TokensTable {
  id: string;
  kind: "user" | "app" | "render";
  /** SHA-256 (hex) of the plaintext; the plaintext is never stored. */
  hash: string;
  /** First characters of the plaintext, for recognising a token by eye in listings. */
  prefix: string;
  name: string | null;
  /** User tokens only: `minted` through /api/token or `paired` through device pairing. */
  source: "minted" | "paired" | null;
  /** Owner of a user token; the viewer a render token acts for (null for anonymous visitors). */
  user_id: string | null;
  /** The app an app or render token is bound to. */
  app_id: string | null;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  /** Why it stopped: `revoked` by its owner, or `claimed` (an app token whose app was claimed). */
  revoked_reason: "revoked" | "claimed" | null;
  last_used_at: number | null;
}

/** One row: bumped by triggers whenever a token is revoked, changed or deleted (migration 022). */
export interface TokenEpochTable {
  id: number;
  epoch: number;
}
