export interface SessionsTable {
  /** SHA-256 (hex) of the cookie value; the value itself is never stored. */
  id: string;
  user_id: string;
  created_at: number;
  last_seen_at: number;
  /** Absolute end (30 days from creation); the 7-day idle end derives from `last_seen_at`. */
  expires_at: number;
}
