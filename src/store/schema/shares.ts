/**
 * An app shared with one person: an invitation until accepted (`pending` for an account,
 * `invited` for an email with no account yet), then a grant (`accepted`).
 */
export interface AppSharesTable {
  /** Opaque id the owner revokes by. */
  id: string;
  app_id: string;
  grantee_user_id: string | null;
  /** Set only for an invitation to an email with no account (lower-cased). */
  grantee_email: string | null;
  role: "collaborator" | "end-user" | "viewer";
  status: "pending" | "invited" | "accepted";
  invited_by: string;
  created_at: number;
  /** An invitation not accepted by then is `expired` (14 days); grants keep it but never expire. */
  expires_at: number;
  accepted_at: number | null;
}
