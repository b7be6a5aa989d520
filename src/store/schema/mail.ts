/** Outgoing mail: every message is a row first; SMTP, when configured, sends it and sets sent_at. */
export interface OutboxTable {
  id: string;
  to_address: string;
  subject: string;
  body: string;
  created_at: number;
  sent_at: number | null;
  /** The last SMTP failure, if sending failed. */
  error: string | null;
}

/** One emailed verification link; the token is kept as its sha256. */
export interface EmailVerificationsTable {
  token_hash: string;
  user_id: string;
  /** The address the link was sent to: it verifies only while the account still has it. */
  email: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}
