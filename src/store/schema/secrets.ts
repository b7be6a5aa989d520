/**
 * Write-only secrets, scoped to (owner, manifest id, name) rather than to an app id, so they
 * survive the owner deleting and re-creating an app with the same manifest id (DECISIONS §7).
 */
export interface SecretsTable {
  owner_user_id: string;
  manifest_id: string;
  name: string;
  /** `v1.<iv>.<tag>.<ciphertext>`, base64url parts; AES-256-GCM with the scope as associated data. */
  sealed: string;
  /** Plaintext length in bytes, for listings that never touch the value. */
  size_bytes: number;
  created_at: number;
  updated_at: number;
}

/** Changes (to a fresh random 48-bit value) on every write of a secrets scope; see migration 019. */
export interface SecretVersionsTable {
  owner_user_id: string;
  manifest_id: string;
  version: number;
}
